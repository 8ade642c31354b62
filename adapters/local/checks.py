"""Checks on what callers hand the local store, before anything is embedded or written.

Everything malformed becomes `InvalidRequest` (a member of the one error tree, and a
`ValueError`): a wrong type, a lone surrogate SQLite cannot encode, an id outside the identity
grammar, a limit that is not a positive integer. Never a TypeError or UnicodeEncodeError from
deep inside.

This module never touches the database and never decides who may see what.
"""

from __future__ import annotations

import math

from adapters.base import MemoryPatch, NewMemory, Provenance, Status
from adapters.errors import InvalidRequest
from adapters.local.records import encodable
from identity.errors import VikingBridgeError
from identity.ids import validate_id

__all__ = ["valid_key", "valid_statuses", "valid_limit", "check_new", "check_patch"]


def valid_key(value: object, what: str) -> str:
    """An id the identity grammar accepts; anything else is `InvalidRequest` (a member of the tree)."""
    if not isinstance(value, str):
        raise InvalidRequest(f"{what} must be a string, got {type(value).__name__}", backend="local")
    try:
        validate_id(value, what)
    except VikingBridgeError:
        raise
    except ValueError as exc:
        raise InvalidRequest(str(exc), backend="local") from None
    return value


def valid_statuses(statuses: object, *, allow_none: bool) -> frozenset[Status] | None:
    if statuses is None and allow_none:
        return None
    if not isinstance(statuses, (set, frozenset, list, tuple)) or not statuses or not all(isinstance(s, Status) for s in statuses):
        raise InvalidRequest("statuses must be a non-empty set of Status", backend="local")
    return frozenset(statuses)


def valid_limit(limit: object, maximum: int | None = None) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1 or (maximum is not None and limit > maximum):
        raise InvalidRequest(f"limit must be an integer in [1, {maximum or 'inf'}], got {limit!r}", backend="local")
    return limit


def check_new(memory: object) -> NewMemory:
    if not isinstance(memory, NewMemory):
        raise InvalidRequest(f"put expects NewMemory, got {type(memory).__name__}", backend="local")
    if not isinstance(memory.content, str) or not isinstance(memory.kind, str) or not memory.kind:
        raise InvalidRequest("content and kind must be strings (kind non-empty)", backend="local")
    encodable(memory.content, "content")
    encodable(memory.kind, "kind")
    if not isinstance(memory.provenance, Provenance) or not isinstance(memory.status, Status):
        raise InvalidRequest("provenance must be a Provenance and status a Status", backend="local")
    if memory.subject_user_id is not None and not isinstance(memory.subject_user_id, str):
        raise InvalidRequest("subject_user_id must be a string or None", backend="local")
    if memory.created_at is not None and (not isinstance(memory.created_at, (int, float)) or not math.isfinite(memory.created_at)):
        raise InvalidRequest("created_at must be a finite number of epoch seconds", backend="local")
    if memory.expires_at is not None and (not isinstance(memory.expires_at, (int, float)) or not math.isfinite(memory.expires_at)):
        raise InvalidRequest("expires_at must be a finite number of epoch seconds", backend="local")
    return memory


def check_patch(patch: object) -> MemoryPatch:
    if not isinstance(patch, MemoryPatch):
        raise InvalidRequest(f"update expects MemoryPatch, got {type(patch).__name__}", backend="local")
    if patch.content is not None:
        if not isinstance(patch.content, str):
            raise InvalidRequest("patch content must be a string", backend="local")
        encodable(patch.content, "content")
    if patch.status is not None and not isinstance(patch.status, Status):
        raise InvalidRequest("patch status must be a Status", backend="local")
    if patch.confidence is not None and (
        not isinstance(patch.confidence, (int, float)) or isinstance(patch.confidence, bool) or not 0.0 <= patch.confidence <= 1.0
    ):
        raise InvalidRequest("patch confidence must be a number in [0, 1]", backend="local")
    return patch
