"""The one record envelope of the remote adapters: memory ids, the record's fields, and what
happens to a record that does not decode.

A remote backend stores a memory as its content plus ONE envelope (a JSON object) holding every
other field the protocol needs. Each adapter only frames it for its service — Viking Memory puts
the JSON into `memory_info.vb_record` next to `summary`, OpenViking writes it as the first line
of the memory's file (`<!--viking-bridge {...}-->`) — and both decode it here, with one failure
contract: a record that does not decode, or names another scope or id than the place it was read
from, raises `CorruptRecord` inside the adapter, and the adapter DROPS it and raises an alarm
(`RecordAlarms`). It is never returned, never repaired, never trusted for its scope.

    {"v": 1, "id": "m<32 hex>", "scope": "acme/user/u17", "kind": "fact", "status": "active",
     "confidence": 1.0, "subject_user_id": null, "metadata": {...}, "provenance": {...},
     "created_at": 1750000000.0, "updated_at": 1750000000.0, "expires_at": 1760000000.0}

`expires_at` is present only for a memory that expires (older envelopes simply lack it).

The envelope's `scope` and `id` are never believed: the adapter establishes both from where the
record was read (a principal, a file name) and only checks that the envelope agrees.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import math
import re
from types import MappingProxyType
from typing import Any, Mapping

from adapters.base import Provenance, Status, StoredMemory
from adapters.errors import CorruptRecord, InvalidRequest
from adapters.scopes import ScopeKey

__all__ = [
    "ENVELOPE_VERSION",
    "MEMORY_ID",
    "memory_id_for",
    "to_envelope",
    "from_envelope",
    "dump_envelope",
    "load_envelope",
    "RecordAlarms",
]

ENVELOPE_VERSION = 1
#: Our memory ids: `m` + 32 hex chars (128 bits), valid in every remote backend's id alphabet.
MEMORY_ID = re.compile(r"^m[0-9a-f]{32}\Z")

alarm_log = logging.getLogger("adapters.alarm")


def memory_id_for(scope: ScopeKey, idempotency_key: str) -> str:
    """Deterministic memory id: the same key in the same scope always names the same memory, so a
    retried put lands on (or finds) the same record, and two scopes never share an id. A scope
    maps to exactly one backend principal, so this is also "(principal, key) -> id"."""
    if not isinstance(scope, ScopeKey):
        raise InvalidRequest(f"memory ids are derived from a ScopeKey, not {type(scope).__name__}")
    if not isinstance(idempotency_key, str) or not idempotency_key:
        raise InvalidRequest("idempotency_key must be a non-empty string")
    digest = hashlib.sha256(f"viking-bridge/memory\x00{scope}\x00{idempotency_key}".encode("utf-8", "surrogatepass"))
    return "m" + digest.hexdigest()[:32]


def to_envelope(memory: StoredMemory) -> dict[str, Any]:
    """Every field of `memory` except its content, JSON-ready."""
    envelope: dict[str, Any] = {
        "v": ENVELOPE_VERSION,
        "id": memory.id,
        "scope": str(memory.scope),
        "kind": memory.kind,
        "status": memory.status.value,
        "confidence": memory.confidence,
        "subject_user_id": memory.subject_user_id,
        "metadata": dict(memory.metadata),
        "provenance": memory.provenance.to_dict(),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }
    if memory.expires_at is not None:
        envelope["expires_at"] = memory.expires_at
    return envelope


def dump_envelope(envelope: Mapping[str, Any]) -> str:
    """Compact ASCII JSON (no NaN): safe inside a JSON string field and an HTML comment alike."""
    return json.dumps(envelope, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)


def load_envelope(text: object) -> dict[str, Any]:
    """The JSON object in `text`; `CorruptRecord` for anything else."""
    if not isinstance(text, str):
        raise CorruptRecord("the record envelope is not a string")
    try:
        env = json.loads(text)
    except ValueError:
        raise CorruptRecord("the record envelope is not JSON") from None
    if not isinstance(env, dict):
        raise CorruptRecord("the record envelope is not a JSON object")
    return env


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise CorruptRecord(f"record field {what} is not a finite number")
    return float(value)


def from_envelope(envelope: Mapping[str, Any], *, scope: ScopeKey, memory_id: str | None, content: object) -> StoredMemory:
    """The StoredMemory an envelope describes, read from `scope` (and, when known, as `memory_id`).

    Raises `CorruptRecord` when the envelope is not ours, is of another version, is a marker
    (registry row), or names another scope or id than the place it was read from."""
    env = envelope
    if env.get("v") != ENVELOPE_VERSION:
        raise CorruptRecord("unknown record version")
    if env.get("marker"):
        raise CorruptRecord("a registry marker is not a memory")
    if env.get("scope") != str(scope):
        raise CorruptRecord("the record names another scope than the place it was read from")
    rid = env.get("id")
    if not isinstance(rid, str) or (memory_id is not None and rid != memory_id):
        raise CorruptRecord("the record names another memory id than the place it was read from")
    if not isinstance(content, str):
        raise CorruptRecord("the record has no text content")
    metadata = env.get("metadata") or {}
    prov = env.get("provenance")
    if not isinstance(metadata, dict) or not isinstance(prov, dict):
        raise CorruptRecord("record metadata or provenance is not an object")
    if any(not isinstance(v, (str, int, float, bool, type(None))) for v in metadata.values()):
        raise CorruptRecord("record metadata holds a non-scalar value")
    subject = env.get("subject_user_id")
    if subject is not None and not isinstance(subject, str):
        raise CorruptRecord("record subject is not a string")
    try:
        status = Status(env.get("status"))
        provenance = Provenance.from_dict(prov)
    except (KeyError, TypeError, ValueError):
        raise CorruptRecord("record status or provenance is malformed") from None
    kind = env.get("kind")
    if not isinstance(kind, str) or not kind:
        raise CorruptRecord("record kind is missing")
    confidence = _number(env.get("confidence"), "confidence")
    if not 0.0 <= confidence <= 1.0:
        raise CorruptRecord("record confidence is outside [0, 1]")
    return StoredMemory(
        id=rid,
        scope=scope,  # from where it was read, never from the envelope
        content=content,
        kind=kind,
        status=status,
        confidence=confidence,
        provenance=provenance,
        subject_user_id=subject,
        metadata=MappingProxyType(dict(metadata)),
        created_at=_number(env.get("created_at"), "created_at"),
        updated_at=_number(env.get("updated_at"), "updated_at"),
        expires_at=None if env.get("expires_at") is None else _number(env.get("expires_at"), "expires_at"),
    )


class RecordAlarms:
    """Counts and logs every record an adapter dropped because it did not decode or could not be
    attributed to the place it was read from. The count is what tests and operators watch; the
    log line names the backend, the scope and the reason, never the record's content."""

    def __init__(self, backend: str, *, keep: int = 100) -> None:
        self.backend = backend
        self.count = 0
        self.recent: collections.deque[tuple[str, str]] = collections.deque(maxlen=keep)

    def raise_alarm(self, scope: ScopeKey | str | None, reason: str) -> None:
        self.count += 1
        where = str(scope) if scope is not None else "-"
        self.recent.append((where, reason))
        alarm_log.error("%s: dropped a stored record in %s: %s", self.backend, where, reason)

    def __repr__(self) -> str:
        return f"RecordAlarms({self.backend!r}, count={self.count})"
