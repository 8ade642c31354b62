"""Authentication at the edge: HTTP credentials -> one `MemoryIdentity`, or a 401.

Accepted (each only if its provider is configured):
    Authorization: Bearer <JWT>                      -> JwtProvider
    Authorization: ApiKey <key>   or   X-API-Key     -> ApiKeyProvider
    Authorization: Bearer vbk_<key id>_<secret>      -> ApiKeyProvider (most SDKs send a key as a
                                                        bearer token; the `vbk_` prefix, which no
                                                        JWT has, decides — every other bearer token
                                                        is verified as a JWT, nothing is tried twice)
    X-VB-* headers + X-VB-Signature                  -> GatewayProvider, given the SHA-256 of
                                                        the body exactly as received
A request presenting more than one kind of credential is refused (which one would win is an
attack surface). Any `X-VB-*` header makes the request a gateway request: without a configured
gateway, or without a valid signature, it is a 401 — never ignored, so a client cannot believe
it chose its identity. `X-Session-Id` (the only thing a request may choose) narrows the
identity's session; the session binding is checked by the bridge. A request whose credential
names no session (an API key; a JWT without a session claim; gateway headers without
X-VB-Session) and that sends no X-Session-Id runs in the identity's *default session*, an id
derived from its fingerprint and keyed with the server's secret — so nobody can compute another
user's, and no client may name an id in that namespace (refused) — and it is bound once instead
of a fresh session being bound (one durable write) on every request.

The gateway's nonce cache is a SQLite file shared by every worker process, so a nonce used on
one worker is refused by all others. This module never reads identity from a body or query.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence

from bridge.doors.edge import default_session_id
from bridge.errors import Unauthenticated
from identity.model import MemoryIdentity
from identity.providers.api_keys import API_KEY_PREFIX
from identity.providers.base import ApiKey, BearerToken, Credential, GatewayRequest, IdentityProvider, narrow

__all__ = ["EdgeAuthenticator", "SESSION_HEADER"]

SESSION_HEADER = "x-session-id"
_SCHEMES = {"bearer": "jwt", "apikey": "api_key"}
_API_KEY_BEARER = f"{API_KEY_PREFIX}_"
#: identities in their default session kept by `_in_default_session` (cleared when full)
_DEFAULT_SESSIONS_MAX = 4096


class EdgeAuthenticator:
    """`authenticate(method, target, headers, body)`: `target` is the path plus query string as
    received (what a gateway signs); `headers` a list of (lower-case name, value) pairs."""

    def __init__(
        self, providers: Mapping[str, IdentityProvider], *, sessionless: Sequence[str] = ("api_key",), session_key: bytes | None = None,
    ) -> None:
        self.providers = dict(providers)
        #: the default-session key (`default_session_key(home)` in the service; random if not given)
        self.session_key = session_key or secrets.token_bytes(32)
        #: credential kinds whose provider invents a random session id when none is named
        self.sessionless = frozenset(sessionless) | {"gateway"}
        self._default_sessions: dict[tuple[object, ...], MemoryIdentity] = {}

    @property
    def challenge(self) -> str:
        kinds = [s for s, k in (("Bearer", "jwt"), ("ApiKey", "api_key")) if k in self.providers]
        return ", ".join(f'{s} realm="viking-bridge"' for s in kinds) or 'Gateway realm="viking-bridge"'

    async def authenticate(self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes) -> MemoryIdentity:
        presented: list[str] = []
        authorization: list[str] = []
        api_key_header: list[str] = []
        sessions: list[str] = []
        gateway = gateway_session = False
        for name, value in headers:  # one pass over the headers for everything read from them
            if name == "authorization":
                authorization.append(value)
            elif name == "x-api-key":
                api_key_header.append(value)
            elif name == SESSION_HEADER:
                sessions.append(value)
            elif name.startswith("x-vb-"):
                gateway = True
                gateway_session = gateway_session or name == "x-vb-session"
        if len(authorization) > 1 or len(api_key_header) > 1:
            raise Unauthenticated("more than one Authorization or X-API-Key header")
        if authorization:
            scheme, _, token = authorization[0].strip().partition(" ")
            kind = _SCHEMES.get(scheme.lower())
            if kind is None or not token.strip():
                raise Unauthenticated("Authorization must be 'Bearer <JWT>', 'Bearer <API key>' or 'ApiKey <key>'")
            if kind == "jwt" and token.strip().startswith(_API_KEY_BEARER):
                kind = "api_key"
            presented.append(kind)
        if api_key_header:
            presented.append("api_key")
        if gateway:
            presented.append("gateway")
        if not presented:
            raise Unauthenticated("no credential presented (Authorization: Bearer/ApiKey, X-API-Key, or signed gateway headers)")
        if len(presented) > 1:
            raise Unauthenticated(f"present exactly one credential, not {len(presented)} ({', '.join(presented)})")
        kind = presented[0]
        provider = self.providers.get(kind)
        if provider is None:
            if kind == "gateway":
                raise Unauthenticated("X-VB-* identity headers are accepted only from a configured gateway that signs them")
            raise Unauthenticated(f"this service does not accept {kind} credentials (accepted: {', '.join(sorted(self.providers)) or 'none'})")
        if kind == "gateway":
            credential: Credential = GatewayRequest(method, target, list(headers), content_sha256=hashlib.sha256(body).hexdigest())
        elif kind == "jwt":
            credential = BearerToken(authorization[0].strip().partition(" ")[2].strip())
        else:
            credential = ApiKey((api_key_header[0] if api_key_header else authorization[0].strip().partition(" ")[2]).strip())
        default_session = not sessions and kind in self.sessionless and not (kind == "gateway" and gateway_session)
        bound = getattr(provider, "bound_identity", None) if default_session else None
        # a provider that can say whom a credential is bound to without inventing a session for it
        # (API keys): the default session replaces that session anyway; the credential is verified
        # in full either way
        identity = await (bound(credential) if bound is not None else provider.authenticate(credential))
        if len(sessions) > 1:
            raise Unauthenticated("more than one X-Session-Id header")
        if sessions:
            return narrow(identity, {"session_id": sessions[0].strip()})
        if default_session:
            return self._in_default_session(identity)
        return identity

    def _in_default_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        """`identity` in its default session. The result depends only on the identity's fields
        other than the session (the id is an HMAC of its fingerprint), so it is kept per those
        fields: each request still authenticates its credential in full first."""
        fields = dict(identity.__dict__)  # every field but the session, whatever fields it has (read as stored: no per-field iteration)
        del fields["session_id"]
        key = tuple(fields.items())
        known = self._default_sessions.get(key)
        if known is None:
            known = identity.with_session(default_session_id(identity, self.session_key))
            if len(self._default_sessions) >= _DEFAULT_SESSIONS_MAX:
                self._default_sessions.clear()
            self._default_sessions[key] = known
        return known
