"""Opaque `list_page` cursors: the last rowid seen, signed for one scope of one store.

A cursor is `base64url(rowid: 8 bytes big-endian || HMAC-SHA256(cursor_key, scope || rowid)[:16])`.
The key is random per store (meta `cursor_key`), so a cursor is bound to the scope it was
issued for and to the store that issued it: one from another scope, another store, or made up
is `InvalidRequest`. Even a valid cursor could only move the walk inside its own scope (the
query is always `scope = ?`); the signature keeps callers from treating rowids as an API.

This module never touches the database.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey

__all__ = ["encode_cursor", "decode_cursor"]

_MAC_BYTES = 16


def _mac(key: bytes, scope: ScopeKey, rowid: int) -> bytes:
    message = str(scope).encode("utf-8") + b"\x00" + rowid.to_bytes(8, "big", signed=True)
    return hmac.new(key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def encode_cursor(key: bytes, scope: ScopeKey, rowid: int) -> str:
    raw = rowid.to_bytes(8, "big", signed=True) + _mac(key, scope, rowid)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(key: bytes, scope: ScopeKey, cursor: object) -> int:
    """The rowid after which the next page starts; `InvalidRequest` unless issued for `scope`."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 64:
        raise InvalidRequest("cursor must be a string returned by list_page", backend="local", scope=scope)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidRequest("cursor is not one list_page returned", backend="local", scope=scope) from None
    if len(raw) != 8 + _MAC_BYTES:
        raise InvalidRequest("cursor is not one list_page returned", backend="local", scope=scope)
    rowid = int.from_bytes(raw[:8], "big", signed=True)
    if not hmac.compare_digest(raw[8:], _mac(key, scope, rowid)):
        raise InvalidRequest("cursor was not issued for this scope of this store", backend="local", scope=scope)
    return rowid
