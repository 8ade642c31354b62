"""How one LangGraph item is one bridge memory, and back.

The item's value (a JSON-safe dict) is the memory's *content*, as canonical JSON, together with
its namespace and key:

    {"langgraph": {"namespace": [...], "key": "..."}, "value": {...}}

Content, not metadata, because the bridge's metadata holds only scalars (a value is any JSON),
because content is what the backend embeds (so `search(query=...)` ranks by the value's text),
and because a recall's items carry content but not metadata (one call per search, not 1 + n).
Namespace and key inside the content are labels *within* the scope the bridge put the memory in;
they never choose a scope (the scope of every memory read comes from the bridge), and a record
whose content is not of this shape is not a store item (`decode` returns None).

Timestamps are the memory's own (`created_at`/`updated_at` of the record) where the read path
returns them; a recall does not, so search items carry the time stored in the content.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

from bridge.errors import InvalidInput
from bridge.doors.langgraph.errors import UnsupportedStoreOperation

__all__ = ["Decoded", "item_key", "encode", "decode", "matches_filter", "as_datetime"]

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass(frozen=True, slots=True)
class Decoded:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float


def item_key(namespace: tuple[str, ...], key: str) -> str:
    """The idempotency key a put of (namespace, key) writes with, and `FindByKey` looks up.

    Derived from namespace and key only (not the value), so the caller's item is found again in
    O(1) whatever it holds; the bridge namespaces it by the writer, so it is unique per (scope,
    namespace, key, writer) and nobody else's put can reach it."""
    digest = hashlib.sha256(json.dumps([list(namespace), key], ensure_ascii=False).encode()).hexdigest()
    return "lg" + digest[:40]


def encode(namespace: tuple[str, ...], key: str, value: Mapping[str, Any], *, created_at: float | None = None) -> str:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"a store value is a dict, got {type(value).__name__}")
    now = time.time()
    envelope = {"langgraph": {"namespace": list(namespace), "key": key, "created_at": created_at or now, "updated_at": now}, "value": dict(value)}
    try:
        return json.dumps(envelope, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a store value must be JSON-serialisable: {exc}") from None


def decode(content: str) -> Decoded | None:
    """The item a memory's content holds, or None if it is no store item."""
    if not content.startswith("{"):
        return None
    try:
        data = json.loads(content)
        head, value = data["langgraph"], data["value"]
        namespace = tuple(head["namespace"])
        key = head["key"]
        if not isinstance(value, dict) or not isinstance(key, str) or not all(isinstance(x, str) for x in namespace):
            return None
        return Decoded(namespace, key, value, float(head.get("created_at", 0.0)), float(head.get("updated_at", 0.0)))
    except (ValueError, KeyError, TypeError):
        return None


def as_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _compare(actual: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and condition and all(isinstance(k, str) and k.startswith("$") for k in condition):
        return all(_apply(actual, op, operand) for op, operand in condition.items())
    if isinstance(condition, Mapping):
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in condition.items())
    return bool(actual == condition)


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op not in _OPERATORS:
        raise UnsupportedStoreOperation(f"filter operator {op!r} is not supported; expected one of {', '.join(_OPERATORS)}")
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    try:
        return bool({"$gt": actual > operand, "$gte": actual >= operand, "$lt": actual < operand, "$lte": actual <= operand}[op])
    except TypeError:  # None or a value of another type: not a match (as LangGraph's own stores)
        return False


def matches_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter semantics (exact match, nested dicts, $eq/$ne/$gt/$gte/$lt/$lte)."""
    if not flt:
        return True
    if not isinstance(flt, Mapping):
        raise UnsupportedStoreOperation(f"a filter is a dict, got {type(flt).__name__}")
    return all(_compare(value.get(k), v) for k, v in flt.items())
