"""How a StoredMemory is written into an OpenViking file, and read back.

The file is the memory's content preceded by ONE header line holding every field the protocol
needs (id, scope, kind, status, confidence, provenance, subject, metadata, timestamps):

    <!--viking-bridge {"v":1,"id":"m…","scope":"acme/user/u17","kind":"fact",…}-->
    The user's favourite tea is sencha.

The header's `scope` and `id` are never *trusted*: the adapter derives both from the file's URI
(the principal it searched and the file name) and drops the record when the header disagrees.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.base import Provenance, Status, StoredMemory
from adapters.scopes import ScopeKey

__all__ = ["HEADER_PREFIX", "encode_record", "decode_record", "RecordError"]

HEADER_PREFIX = "<!--viking-bridge "
_HEADER_SUFFIX = "-->"


class RecordError(ValueError):
    """A file that is not a well-formed viking-bridge record."""


def encode_record(memory: StoredMemory) -> str:
    prov = memory.provenance
    header = {
        "v": 1,
        "id": memory.id,
        "scope": str(memory.scope),
        "kind": memory.kind,
        "status": memory.status.value,
        "confidence": memory.confidence,
        "subject": memory.subject_user_id,
        "metadata": dict(memory.metadata),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "prov": prov.to_dict(),
    }
    line = json.dumps(header, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    if _HEADER_SUFFIX in line:  # cannot happen with ensure_ascii JSON of our fields, but never emit it
        line = line.replace(_HEADER_SUFFIX, "--\\u003e")
    return f"{HEADER_PREFIX}{line}{_HEADER_SUFFIX}\n{memory.content}"


def decode_record(text: str, *, expected_scope: ScopeKey, expected_id: str) -> StoredMemory:
    """Parse a file; raise RecordError if it is not ours or its header names another place."""
    if not isinstance(text, str) or not text.startswith(HEADER_PREFIX):
        raise RecordError("no viking-bridge header")
    first, sep, content = text.partition("\n")
    if not first.endswith(_HEADER_SUFFIX):
        raise RecordError("unterminated header")
    try:
        h: dict[str, Any] = json.loads(first[len(HEADER_PREFIX):-len(_HEADER_SUFFIX)])
        if h.get("v") != 1:
            raise RecordError("unknown record version")
        if h.get("id") != expected_id or h.get("scope") != str(expected_scope):
            raise RecordError("header names another memory or scope than the file's location")
        p = h["prov"]
        metadata = h.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise RecordError("metadata is not an object")
        return StoredMemory(
            id=expected_id,
            scope=expected_scope,  # from the location, never from the header
            content=content,
            kind=str(h["kind"]),
            status=Status(h["status"]),
            confidence=float(h["confidence"]),
            provenance=Provenance.from_dict(p),
            subject_user_id=h.get("subject"),
            metadata=metadata,
            created_at=float(h["created_at"]),
            updated_at=float(h["updated_at"]),
        )
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"malformed header: {type(exc).__name__}") from None
