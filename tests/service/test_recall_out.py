"""The recall route's JSON is serialised from the result without re-validation; it must still be
exactly the `RecallResponse` that validating the result would give (every field, nothing else)."""

from __future__ import annotations

import json

from bridge.doors.http.routes.common import recall_out
from bridge.doors.http.schemas import RecallResponse
from bridge.results import MemoryRef, RecalledMemory, RecallResult


def test_recall_json_is_the_validated_response_model():
    item = RecalledMemory(
        "m1", "workspace:acme/alpha", "workspace", "fact", 'Ünïcode 中文 "quoted" \\ items', 0.123456, "own workspace", "alice@assistant",
        "active", "g1", None, ("m0",), (MemoryRef("tenant:acme", "m9"),), (), 1.5e9,
    )
    result = RecallResult(
        identity="alice@assistant", purpose="chat", query="never echoed", items=(item, item), context="ctx 中", tokens_used=42,
        scopes_searched=("workspace:acme/alpha", "tenant:acme"), partial=True, failed_scopes=("tenant:acme",), guard_alarms=1,
        expired_dropped=2, audit_seq=7,
    )
    body = json.loads(recall_out(result).body)
    expected = RecallResponse.model_validate({**result.model_dump(exclude={"query", "audit_seq", "items"}), "memories": list(result.items)})
    assert body == json.loads(expected.model_dump_json())
    assert "query" not in body and "audit_seq" not in body and len(body["memories"]) == 2
