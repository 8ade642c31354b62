"""Rows of the local store <-> `StoredMemory`, and the checks that tell a damaged row apart.

Encoding refuses what SQLite or JSON cannot hold faithfully (lone surrogates, integers JSON will
not print) as `InvalidRequest` before anything is written. Decoding never guesses: a row whose
status is unknown or whose JSON does not parse raises `RowDamage` naming what is wrong, and the
backend quarantines that row instead of failing the whole scope.

This module never touches the database and never decides who may see a row.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from adapters.base import NewMemory, Provenance, Status, StoredMemory
from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey
from identity.errors import VikingBridgeError

__all__ = ["COLUMNS", "STATUS_CODES", "RowDamage", "content_hash", "provenance_json", "metadata_json", "row_to_memory", "memories_of_columns", "encodable", "encodable_text", "clear_decode_caches", "lenient_text"]

COLUMNS = "rowid, id, scope, content, kind, status, confidence, provenance, subject_user_id, metadata, created_at, updated_at, expires_at"
STATUS_CODES = {s: i for i, s in enumerate(Status)}
_STATUS_BY_VALUE = {s.value: s for s in Status}


class RowDamage(VikingBridgeError):
    """Internal signal: this row cannot be served; `reason` says why (never the row's content).
    The backend catches it, quarantines the row and raises `DamagedRecord` where one row was asked for."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def encodable(text: str, what: str) -> str:
    """`text` if it survives UTF-8 (SQLite's encoding); a lone surrogate is `InvalidRequest`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(f"{what} contains a lone surrogate (not valid Unicode text)", backend="local") from None
    return text


def _dumps(value: Any, what: str) -> str:
    try:
        return encodable(json.dumps(value, sort_keys=True, ensure_ascii=False), what)
    except ValueError as exc:  # an integer too long to print (sys.int_max_str_digits), a circular value
        raise InvalidRequest(f"{what} cannot be stored: {exc}", backend="local") from None


def content_hash(memory: NewMemory) -> str:
    blob = _dumps([memory.content, memory.kind, memory.status.value, dict(memory.metadata)], "memory")
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def provenance_json(p: Provenance) -> str:
    return _dumps(p.to_dict(), "provenance")


def metadata_json(metadata: Mapping[str, Any]) -> str:
    return _dumps(dict(metadata), "metadata")


@functools.lru_cache(maxsize=4096)
def _provenance_from_json(text: str) -> Provenance:
    """Cached: Provenance is immutable, and recalls decode the same few authors over and over."""
    return Provenance.from_dict(json.loads(text))


@functools.lru_cache(maxsize=4096)
def _metadata_template(text: str) -> dict:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise RowDamage("metadata does not decode")
    return value


def _metadata_from_json(text: str) -> dict:
    """A fresh dict every time (values are scalars, so a shallow copy of the cached parse is safe)."""
    return {} if text == "{}" else dict(_metadata_template(text))


#: what parsing a damaged provenance / metadata text raises (a JSON nested too deep: RecursionError)
_PROVENANCE_FAILURES = (ValueError, TypeError, KeyError, AttributeError, RecursionError)
_METADATA_FAILURES = (ValueError, TypeError, RecursionError)


def clear_decode_caches() -> None:
    """Erasure: the caches may hold a subject's provenance or metadata in this process."""
    _provenance_from_json.cache_clear()
    _metadata_template.cache_clear()


def lenient_text(raw: bytes) -> str:
    """The connection's text factory: a TEXT value that is not valid UTF-8 (a damaged page, a
    foreign writer) decodes with surrogate escapes instead of failing the whole fetch, and
    `row_to_memory` then refuses that one row."""
    return raw.decode("utf-8", "surrogateescape")


def encodable_text(text: object) -> bool:
    """False for a str holding a lone surrogate (what `lenient_text` makes of bytes that are not UTF-8)."""
    if not isinstance(text, str):
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_values(mid: Any, content: Any, kind: Any, confidence: Any, expires: Any) -> None:
    """The checks of a row's plain columns; `RowDamage` names the first that fails."""
    if not isinstance(content, str) or not isinstance(kind, str) or not isinstance(mid, str):
        raise RowDamage("a text column holds another type")
    if not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
        raise RowDamage("confidence outside [0, 1]")
    if expires is not None and not isinstance(expires, (int, float)):
        raise RowDamage("expires_at is not a number")


def row_to_memory(row: sqlite3.Row | tuple, scope_key: ScopeKey | None = None, *, check_text: bool = False) -> StoredMemory:
    """Decode one row of `COLUMNS`. `scope_key`, when given, must already be verified equal to
    the row's stored scope. Raises `RowDamage` (never KeyError/ValueError) for a damaged row.
    `check_text`: the row was read with `lenient_text`, so its text may hold escaped garbage."""
    _, mid, scope, content, kind, status, confidence, prov, subject, meta, created, updated, expires = row
    if check_text and not all(encodable_text(t) for t in (mid, scope, content, kind, prov, meta, subject)):
        raise RowDamage("a text column is not valid UTF-8")
    state = _STATUS_BY_VALUE.get(status)
    if state is None:
        raise RowDamage("unknown status")
    try:
        provenance = _provenance_from_json(prov)
    except _PROVENANCE_FAILURES:
        raise RowDamage("provenance does not decode") from None
    try:
        metadata = _metadata_from_json(meta)
    except _METADATA_FAILURES:
        raise RowDamage("metadata does not decode") from None
    _check_values(mid, content, kind, confidence, expires)
    try:
        key = scope_key if scope_key is not None else ScopeKey.parse(scope)
    except (ValueError, TypeError):
        raise RowDamage("scope does not parse") from None
    return StoredMemory(
        id=mid,
        scope=key,
        content=content,
        kind=kind,
        status=state,
        confidence=float(confidence),
        provenance=provenance,
        subject_user_id=subject,
        metadata=metadata,
        created_at=created,
        updated_at=updated,
        expires_at=None if expires is None else float(expires),
    )


def _decoded_or_none(decode: Callable[[Any], Any], text: Any, failures: tuple[type[BaseException], ...]) -> Any:
    try:
        return decode(text)
    except (RowDamage, *failures):
        return None


def memories_of_columns(
    scope_key: ScopeKey, ids: Sequence[Any], contents: Sequence[Any], kinds: Sequence[Any], statuses: Sequence[Any],
    confidences: Sequence[Any], provenances: Sequence[Any], subjects: Sequence[Any], metadatas: Sequence[Any],
    created: Sequence[Any], updated: Sequence[Any], expiries: Sequence[Any],
) -> list[StoredMemory | None]:
    """`row_to_memory` for a whole scope's rows at once, given column by column (one sequence
    per column of `COLUMNS` but rowid and scope, all rows of `scope_key`): each row's record,
    or None where `row_to_memory` would raise `RowDamage` (the caller leaves that row to the
    path that quarantines it, so the reason is worked out there, once). Rows read with
    `lenient_text` are not for this function: the caller does not decode them in bulk.

    Why a variant: a partition load decodes every row of its scope, so the per-row work is
    hoisted out of the loop: each distinct provenance and metadata text is parsed once per
    call, equal kind and subject texts become one shared string, the ScopeKey is one object,
    and when every row passes the checks column by column (the common case) the records are
    built by `map`, without a Python-level loop. The checks are those of `row_to_memory`; tests hold
    the two equal on sound and damaged rows alike."""
    provenance_of = {t: _decoded_or_none(_provenance_from_json, t, _PROVENANCE_FAILURES) for t in set(provenances)}
    template_of = {t: _decoded_or_none(_metadata_template, t, _METADATA_FAILURES) for t in set(metadatas)}
    shared_text = {t: t for t in (*set(kinds), *set(subjects)) if type(t) is str}  # one object per distinct kind / subject
    states = list(map(_STATUS_BY_VALUE.get, statuses))
    sound = (
        None not in states and None not in provenance_of.values() and None not in template_of.values()
        and {str}.issuperset(map(type, ids)) and {str}.issuperset(map(type, contents)) and {str}.issuperset(map(type, kinds))
        and {float, int}.issuperset(map(type, confidences)) and {float, int, type(None)}.issuperset(map(type, expiries))
    )
    if sound:
        scores = np.fromiter(confidences, dtype=np.float64, count=len(confidences))
        sound = bool(((scores >= 0.0) & (scores <= 1.0)).all())  # NaN fails both
    if not sound:
        return _memories_row_by_row(scope_key, ids, contents, kinds, states, confidences, provenances, subjects, metadatas, created, updated, expiries, provenance_of, template_of, shared_text)
    ends = expiries if {float, type(None)}.issuperset(map(type, expiries)) else [None if e is None else float(e) for e in expiries]
    # Equal values share one object: the records of a partition stay resident as long as it
    # does, so each byte a row saves counts. A metadata mapping is shared read-only (a
    # `MappingProxyType`, as `put` returns it), so no record's metadata can change another's.
    metadata_of = {t: MappingProxyType(dict(template)) for t, template in template_of.items()}
    shares = scores.tolist()
    if not np.signbit(scores).any():  # -0.0 == 0.0: never let one stand for the other
        shares = list(map({v: v for v in set(shares)}.__getitem__, shares))
    stamps = [c if type(c) is type(u) and c == u else u for c, u in zip(created, updated)]  # updated_at of a row never edited
    return list(map(
        StoredMemory, ids, itertools.repeat(scope_key), contents, map(shared_text.__getitem__, kinds), states, shares,
        map(provenance_of.__getitem__, provenances), [shared_text.get(t, t) for t in subjects], map(metadata_of.__getitem__, metadatas),
        created, stamps, ends,
    ))


def _memories_row_by_row(
    scope_key: ScopeKey, ids: Sequence[Any], contents: Sequence[Any], kinds: Sequence[Any], states: Sequence[Status | None],
    confidences: Sequence[Any], provenances: Sequence[Any], subjects: Sequence[Any], metadatas: Sequence[Any],
    created: Sequence[Any], updated: Sequence[Any], expiries: Sequence[Any],
    provenance_of: dict, template_of: dict, shared_text: dict,
) -> list[StoredMemory | None]:
    """`memories_of_columns` when some row fails a check: each row checked on its own."""
    out: list[StoredMemory | None] = []
    for mid, content, kind, state, confidence, prov, subject, meta, made, changed, expires in zip(
        ids, contents, kinds, states, confidences, provenances, subjects, metadatas, created, updated, expiries,
    ):
        provenance = provenance_of[prov]
        template = template_of[meta]
        if state is None or provenance is None or template is None:
            out.append(None)
            continue
        try:
            _check_values(mid, content, kind, confidence, expires)  # row_to_memory's own checks
        except RowDamage:
            out.append(None)
            continue
        out.append(StoredMemory(
            mid, scope_key, content, shared_text[kind], state, float(confidence), provenance,
            shared_text.get(subject, subject), dict(template), made, changed,
            None if expires is None else float(expires),
        ))
    return out
