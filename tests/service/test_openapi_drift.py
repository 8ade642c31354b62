"""docs/openapi.json is the code's spec: regenerate with `python -m bridge.doors.http.openapi --write`."""

from __future__ import annotations

import json

from bridge.doors.http.openapi import DEFAULT_PATH, render, spec


def test_committed_openapi_matches_the_code() -> None:
    committed = DEFAULT_PATH.read_text(encoding="utf-8")
    assert committed == render(), "docs/openapi.json is out of date: run python -m bridge.doors.http.openapi --write and commit it"


def test_spec_is_openapi_3_1_and_no_request_model_names_the_caller_identity() -> None:
    document = spec()
    assert document["openapi"].startswith("3.1")
    schemas = document["components"]["schemas"]
    request_models = {ref.rsplit("/", 1)[-1] for path in document["paths"].values() for op in path.values()
                      for ref in [op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")] if ref}
    assert request_models, "no request bodies found"
    for name in request_models:
        properties = schemas[name].get("properties", {})
        assert not {"tenant_id", "roles", "session_id", "department_ids", "workspace_id", "permission_version"} & set(properties), name
        assert schemas[name].get("additionalProperties") is False, f"{name} must refuse unknown fields"
        for caller_field in {"user_id", "team_id"} & set(properties):
            assert "only when equal" in json.dumps(properties[caller_field]), f"{name}.{caller_field} must document the narrowing rule"
