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
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.base import NewMemory, Provenance, Status, StoredMemory
from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey
from identity.errors import VikingBridgeError

__all__ = ["COLUMNS", "STATUS_CODES", "RowDamage", "RecordColumns", "content_hash", "provenance_json", "metadata_json", "row_to_memory", "encodable", "encodable_text", "clear_decode_caches", "lenient_text"]

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
    return _memory(scope_key, scope, mid, content, kind, status, confidence, prov, subject, meta, created, updated, expires)


def _memory(
    scope_key: ScopeKey | None, scope: Any, mid: Any, content: Any, kind: Any, status: Any, confidence: Any, prov: Any,
    subject: Any, meta: Any, created: Any, updated: Any, expires: Any,
) -> StoredMemory:
    """`row_to_memory` of a row's values given one by one (text already known to be UTF-8)."""
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
    # positional, in the order of StoredMemory's fields: id, scope, content, kind, status,
    # confidence, provenance, subject_user_id, metadata, created_at, updated_at, expires_at
    return StoredMemory(
        mid, key, content, kind, state, float(confidence), provenance, subject, metadata, created, updated,
        None if expires is None else float(expires),
    )


class RecordColumns:
    """The record columns of a partition's rows as its load read them (one sequence per column
    of `COLUMNS` but rowid and scope, in that order), each row decoded by `row_to_memory` only
    when it is first asked for: when it becomes a hit.

    Why not decode every row at the load: a scope's first touch then pays for the records of
    all its rows, while a recall returns ten of them; keeping the values SQLite returned costs
    no more memory than the records would (equal short texts are shared, `shared_values`) and
    makes the load cheaper by the decoding. The checks are `row_to_memory`'s own, so a row that
    would not decode gives None here and is left to the path that reads it again and
    quarantines it. Holds nothing but values read from one scope's rows: the partition that
    owns it drops it on any change, exactly as it drops its decoded records."""

    __slots__ = ("_rows", "_scope_text")

    def __init__(self, scope_text: str, rowids: Sequence[int], columns: Sequence[Sequence[Any]]) -> None:
        ids, contents, kinds, statuses, confidences, provenances, subjects, metadatas, created, updated, expiries = columns
        self._scope_text = scope_text
        # one tuple per row, not the columns: a hit reads its row's values together, objects
        # SQLite made one after the other, instead of one scattered slot of each of 11 columns
        self._rows = dict(zip(rowids, zip(
            ids, contents, _shared_texts(kinds), _shared_texts(statuses), confidences, _shared_texts(provenances),
            _shared_texts(subjects), _shared_texts(metadatas), created, updated, expiries,
        )))

    def __len__(self) -> int:
        return len(self._rows)

    def memory(self, rowid: int, scope_key: ScopeKey) -> StoredMemory | None:
        """The record of `rowid` (`scope_key` is the scope its load selected), None for a row
        not held here or one `row_to_memory` refuses."""
        values = self._rows.get(rowid)
        if values is None:
            return None
        try:  # text read by the load's strict decoder: no UTF-8 check to repeat
            return _memory(scope_key, self._scope_text, *values)
        except RowDamage:
            return None


def _shared_texts(column: Sequence[Any]) -> tuple[Any, ...]:
    """`column` with equal strings as one object: SQLite returns a new string per row, and a
    scope's rows repeat a few kinds, statuses, authors and metadata texts over and over; what a
    partition holds for as long as it lives should hold each of them once. Only strings are
    shared (a damaged 1 and 1.0 are equal but not the same value), everything else is kept as is."""
    one = {text: text for text in set(column) if type(text) is str}
    return tuple(map(one.get, column, column))
