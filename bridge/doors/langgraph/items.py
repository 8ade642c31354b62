"""How one LangGraph item is one bridge memory, and back.

    content   the item's *indexed text*, what the backend embeds and what a recall shows:
              the value as canonical JSON (the default, `index=None`), the text at the
              `index=[fields]` paths of the value (one per line), or, for `index=False`, the
              value's JSON (content cannot be empty; the item is flagged unindexed instead)
    metadata  the item's wrapper, never embedded:
                langgraph_namespace   the namespace as a JSON list
                langgraph_key         the key
                langgraph_index       "all", "none", or the JSON list of indexed fields
                langgraph_created_at  the first put's time (kept across re-writes)
                langgraph_value_<n>   the whole value as JSON in chunks, only when the content
                                      is not the whole value (`index=[fields]`)

Why the wrapper lives in metadata: content is what the backend embeds, and a wrapper embedded
with the value (namespace, key, two timestamps) made the query "created_at" outrank a real match
and gave every put different tokens, so rankings changed from run to run. Metadata holds only
scalars of at most 1,000 characters, hence the JSON strings and the value's chunks.

A record is an item only if its wrapper is well-formed (`decode` returns None otherwise, and never
raises: a memory anyone wrote through the plain API is data, not a store item to trust). The
times of an item are the record's own (`updated_at` of the memory, as the backend stamped it); a
claimed `created_at` is used only if it is earlier than the record's (a re-written item keeps its
first put's time) and a sane epoch, so a planted item cannot move itself in time.

Items of the first format (the wrapper and value together inside the content as JSON) are still
read, with the same rules; a put of one re-writes it in this format.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from bridge.errors import InvalidInput
from adapters.scopes import ScopeKey
from bridge.doors.langgraph.errors import UnsupportedStoreOperation

__all__ = ["Decoded", "item_key", "encode", "decode", "matches_filter", "as_datetime", "render_value"]

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
NS, KEY, INDEX, CREATED, VALUE = "langgraph_namespace", "langgraph_key", "langgraph_index", "langgraph_created_at", "langgraph_value_"
_CHUNK = 1000  # the bridge's max_metadata_value_chars
_MAX_CHUNKS = 28  # 32 metadata keys, four of them the wrapper's
_MAX_EPOCH = 253402300799.0  # 9999-12-31: beyond it a datetime cannot hold the time


@dataclass(frozen=True, slots=True)
class Decoded:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: float
    updated_at: float
    indexed: bool = True


def item_key(namespace: tuple[str, ...], key: str) -> str:
    """The idempotency key a put of (namespace, key) writes with, and `FindByKey` looks up.

    Derived from namespace and key only (not the value), so the caller's item is found again in
    O(1) whatever it holds; the bridge namespaces it by the writer, so it is unique per (scope,
    namespace, key, writer) and nobody else's put can reach it."""
    digest = hashlib.sha256(json.dumps([list(namespace), key], ensure_ascii=False).encode()).hexdigest()
    return "lg" + digest[:40]


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a store value must be JSON-serialisable: {exc}") from None


def render_value(value: Mapping[str, Any]) -> str:
    return _dumps(dict(value))


def _indexed_text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
    from langgraph.store.base.embed import get_text_at_path, tokenize_path

    texts: list[str] = []
    for f in fields:
        if not isinstance(f, str) or not f:
            raise InvalidInput(f"an index field is a non-empty path string, got {f!r}")
        texts.extend(t for t in get_text_at_path(dict(value), tokenize_path(f)) if t)
    return "\n".join(texts)


def encode(namespace: tuple[str, ...], key: str, value: Mapping[str, Any], *, index: Any = None,
           created_at: float | None = None) -> tuple[str, dict[str, Any]]:
    """(content, metadata) of an item; `index` as LangGraph's `PutOp.index`."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"a store value is a dict, got {type(value).__name__}")
    whole = _dumps(dict(value))
    meta: dict[str, Any] = {NS: json.dumps(list(namespace), ensure_ascii=False), KEY: key,
                            CREATED: float(created_at if created_at is not None else time.time())}
    if len(meta[NS]) > _CHUNK or len(key) > _CHUNK:
        raise InvalidInput(f"a namespace or key longer than {_CHUNK} characters cannot be stored")
    if index is False:
        meta[INDEX] = "none"
        return whole, meta
    if index is None or index is True:
        meta[INDEX] = "all"
        return whole, meta
    if isinstance(index, str) or not isinstance(index, Sequence):
        raise UnsupportedStoreOperation(f"index is False, None or a list of field paths, got {index!r}")
    fields = list(index)
    text = _indexed_text(value, fields)
    if fields == ["$"] or text == whole:
        meta[INDEX] = "all"
        return whole, meta
    meta[INDEX] = json.dumps(fields, ensure_ascii=False)
    if len(meta[INDEX]) > _CHUNK:
        raise InvalidInput("the index field list is too long to store")
    if not text:  # none of the fields is in the value: nothing to embed, the item is unindexed
        meta[INDEX] = "none"
        return whole, meta
    chunks = [whole[i: i + _CHUNK] for i in range(0, len(whole), _CHUNK)]
    if len(chunks) > _MAX_CHUNKS:
        raise InvalidInput(f"a value indexed by fields is stored beside its text, at most {_MAX_CHUNKS * _CHUNK} characters of JSON")
    meta.update({f"{VALUE}{n}": c for n, c in enumerate(chunks)})
    return text, meta


def _epoch(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and 0.0 <= x <= _MAX_EPOCH else None


def _times(claimed_created: Any, record_created: float, record_updated: float) -> tuple[float, float]:
    created = _epoch(claimed_created)
    rc = _epoch(record_created) or 0.0
    ru = _epoch(record_updated) or rc
    return (created if created is not None and created < rc else rc), max(ru, rc)


def decode(content: str, metadata: Mapping[str, Any] | None = None, *, created_at: float = 0.0, updated_at: float = 0.0) -> Decoded | None:
    """The item a memory holds (its content, metadata and the record's times), or None if it is
    no well-formed store item. Never raises on a malformed or hostile memory."""
    try:
        meta = metadata or {}
        if NS in meta or KEY in meta:
            return _decode_meta(content, meta, created_at, updated_at)
        return _decode_legacy(content, created_at, updated_at)
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
        return None


def _namespace(raw: Any) -> tuple[str, ...] | None:
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) and x for x in raw):
        return None
    return tuple(raw)


def _decode_meta(content: str, meta: Mapping[str, Any], created_at: float, updated_at: float) -> Decoded | None:
    ns_raw, key, index = meta.get(NS), meta.get(KEY), meta.get(INDEX, "all")
    if not isinstance(ns_raw, str) or not isinstance(key, str) or not key or not isinstance(index, str):
        return None
    namespace = _namespace(json.loads(ns_raw))
    if namespace is None:
        return None
    if index in ("all", "none"):
        value = json.loads(content)
    else:
        chunks = []
        for n in range(_MAX_CHUNKS):
            c = meta.get(f"{VALUE}{n}")
            if not isinstance(c, str):
                break
            chunks.append(c)
        value = json.loads("".join(chunks))
    if not isinstance(value, dict):
        return None
    created, updated = _times(meta.get(CREATED), created_at, updated_at)
    return Decoded(namespace, key, value, created, updated, indexed=index != "none")


def _decode_legacy(content: str, created_at: float, updated_at: float) -> Decoded | None:
    if not content.startswith("{"):
        return None
    data = json.loads(content)
    if not isinstance(data, dict):
        return None
    head, value = data["langgraph"], data["value"]
    namespace = _namespace(head["namespace"])
    key = head["key"]
    if namespace is None or not isinstance(value, dict) or not isinstance(key, str):
        return None
    created, updated = _times(head.get("created_at"), created_at, updated_at)
    return Decoded(namespace, key, value, created, updated)


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


def ttl_seconds(ttl: float | None) -> float | None:
    """LangGraph's TTL (minutes) as the bridge's `ttl_s`; the operation validates the range."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise InvalidInput(f"ttl must be a number of minutes, got {type(ttl).__name__}")
    return float(ttl) * 60.0


class Found:
    __slots__ = ("scope", "memory_id", "author", "item")

    def __init__(self, scope: ScopeKey, memory_id: str, author: str, item: Decoded) -> None:
        self.scope, self.memory_id, self.author, self.item = scope, memory_id, author, item


def decode_record(record: Any) -> Decoded | None:
    """The store item a read record holds (its times are the record's own), or None."""
    return decode(record.content, getattr(record, "metadata", None), created_at=float(getattr(record, "created_at", 0.0) or 0.0),
                  updated_at=float(getattr(record, "updated_at", 0.0) or 0.0))
