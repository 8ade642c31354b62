"""Opaque, scope-bound page cursors for `MemoryBackend.list_page`.

A cursor is the adapter's own resume state (for example "continue below this timestamp"),
signed with a key only the adapter holds and bound to the ScopeKey it was minted for. The
bridge passes it back untouched; a cursor minted for another scope, by another key, or edited
in transit is refused with `InvalidRequest` before any backend call, so a cursor can never
widen a walk beyond the scope the call names. It never decides who may see what.

    <base64url(JSON state)>.<base64url(HMAC-SHA256(key, scope NUL JSON state))[:22]>
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any, Mapping

from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey

__all__ = ["CursorCodec", "MAX_CURSOR_CHARS"]

MAX_CURSOR_CHARS = 64_000
_TAG_CHARS = 22  # 132 bits of the MAC


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorCodec:
    """Mints and opens cursors with one secret key (random per instance unless one is given:
    pass a persisted key to keep cursors valid across restarts)."""

    def __init__(self, key: bytes | None = None, *, backend: str = "adapter") -> None:
        self._key = key if key else secrets.token_bytes(32)
        self._backend = backend

    def __repr__(self) -> str:
        return f"CursorCodec(backend={self._backend!r})"

    def _tag(self, scope: ScopeKey, body: str) -> str:
        mac = hmac.new(self._key, f"{scope}\x00{body}".encode("utf-8"), hashlib.sha256).digest()
        return _b64(mac)[:_TAG_CHARS]

    def mint(self, scope: ScopeKey, state: Mapping[str, Any]) -> str:
        body = _b64(json.dumps(dict(state), sort_keys=True, separators=(",", ":")).encode("utf-8"))
        return f"{body}.{self._tag(scope, body)}"

    def open(self, scope: ScopeKey, cursor: object) -> dict[str, Any]:
        """The state inside `cursor`; `InvalidRequest` if it is not one this codec minted for `scope`."""
        refuse = InvalidRequest("the cursor is not one this backend issued for this scope", backend=self._backend, scope=scope)
        if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_CHARS or cursor.count(".") != 1:
            raise refuse
        body, tag = cursor.split(".")
        if not hmac.compare_digest(self._tag(scope, body).encode("ascii"), tag.encode("ascii", "replace")):
            raise refuse
        try:
            state = json.loads(_unb64(body))
        except (ValueError, UnicodeDecodeError):
            raise refuse from None
        if not isinstance(state, dict):
            raise refuse
        return state
