"""The provider contract: one credential in, one `MemoryIdentity` out — and nothing else in.

Why the shape matters: invariant 1 of the design says no body field, metadata key, prompt text or
memory content may change who is asking. The simplest way to make that true is to make it
*unexpressible*: `authenticate` takes exactly one argument, a small frozen credential object, and
none of the credential types has a slot for a request body, message text or metadata. A caller
that wanted to pass a body would have nowhere to put it.

The only thing a request may choose is its session id, through `narrow` (see below); everything
that decides access comes from the credential.

This module must never build an identity from anything but a verified credential.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from identity.errors import Forbidden, InvalidCredential, InvalidIdentityInput, Unauthenticated
from identity.ids import InvalidIdError, validate_id
from identity.model import MemoryIdentity

__all__ = [
    "ApiKey",
    "BearerToken",
    "Credential",
    "DevEnvironment",
    "GatewayRequest",
    "IdentityProvider",
    "NARROWABLE_FIELDS",
    "DEFAULT_SESSION_PREFIX",
    "refuse_default_namespace",
    "narrow",
    "new_session_id",
    "require_credential",
]


# --------------------------------------------------------------------------- credentials
@dataclass(frozen=True, slots=True)
class BearerToken:
    """A JWT from `Authorization: Bearer <token>`. `repr` hides the token."""

    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A bridge-issued API key (`vbk_<key_id>_<secret>`). `repr` hides the key."""

    key: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class GatewayRequest:
    """What a trusted gateway's signature covers: method, path (+ query) and the headers.

    `headers` may be a mapping, an `httpx.Headers`, or a sequence of `(name, value)` pairs; names
    are matched case-insensitively. `content_sha256` is the hex SHA-256 of the request body as
    received, computed by the HTTP layer, to check a signed `X-VB-Content-SHA256`. The credential
    holds only that digest, never the body: identity cannot depend on body content.
    """

    method: str
    path: str
    headers: object
    content_sha256: str | None = None


@dataclass(frozen=True, slots=True)
class DevEnvironment:
    """Marker credential for the development fallback: "use the identity from the environment"."""


Credential = BearerToken | ApiKey | GatewayRequest | DevEnvironment


# --------------------------------------------------------------------------- protocol
@runtime_checkable
class IdentityProvider(Protocol):
    """Turns one credential into one identity, or raises.

    Raises `Unauthenticated` (or its subclasses `InvalidCredential`, `ExpiredCredential`) when
    nobody can be established — HTTP 401; `Forbidden` when the caller is known but refused —
    HTTP 403; `IdentityProviderUnavailable` when the check could not run — HTTP 503.
    Async for uniformity: the JWT provider may fetch a JWKS; the others never await anything.
    """

    async def authenticate(self, credential: Credential) -> MemoryIdentity: ...


def require_credential(credential: object, kind: type, provider: str) -> None:
    """Refuse a missing or wrong-kind credential as `Unauthenticated` (fail closed, HTTP 401)."""
    if credential is None:
        raise Unauthenticated(f"{provider}: no credential presented (expected {kind.__name__})")
    if not isinstance(credential, kind):
        raise Unauthenticated(
            f"{provider}: expected a {kind.__name__} credential, got {type(credential).__name__}"
        )


# --------------------------------------------------------------------------- helpers
def new_session_id() -> str:
    """A fresh session id: 32 lowercase hex chars (uuid4), always valid under the id grammar."""
    return uuid.uuid4().hex


def credential_id(value: object, source: str) -> str:
    """Validate an id taken from a credential; a bad one is an `InvalidCredential` naming `source`
    (e.g. "claim 'tid'", "header X-VB-User"). The offending value is not echoed back."""
    try:
        return validate_id(value, source)
    except InvalidIdError as exc:
        raise InvalidCredential(f"{source} is not a valid id: {exc.rule}") from None


def credential_ids(values: Iterable[object], source: str) -> frozenset[str]:
    return frozenset(credential_id(v, source) for v in values)


def _field_name(key: object) -> str:
    """A requested field's name for a message: printable text only, never a crash."""
    if isinstance(key, str) and key.isascii() and key.isprintable() and len(key) <= 64:
        return key
    return f"<{type(key).__name__}>"


# --------------------------------------------------------------------------- narrowing
NARROWABLE_FIELDS = frozenset({"session_id"})
"""The only identity field a request may choose. Everything else comes from the credential."""

DEFAULT_SESSION_PREFIX = "dflt"
"""The namespace of default sessions (bridge/doors/edge.py): ids the server derives for a caller
whose credential names no session. Only the server puts an id there — a client (a request
header, a gateway header, a token claim) that names one is refused, since binding another
user's default session to oneself would lock that user out of their own."""


def refuse_default_namespace(session_id: object, source: str) -> None:
    """`Forbidden` for a session id in the default-session namespace chosen by anyone but the server."""
    if isinstance(session_id, str) and session_id.startswith(DEFAULT_SESSION_PREFIX):
        raise Forbidden(f"{source} names a session id in the server's default-session namespace ({DEFAULT_SESSION_PREFIX}...); "
                        "send no session to use your default one, or start a session")


def narrow(identity: MemoryIdentity, requested: Mapping[str, object] | None = None) -> MemoryIdentity:
    """Apply what a request asked for to an authenticated identity — which can only be a session.

    `requested` is whatever identity-ish fields a request carried explicitly (e.g. the HTTP
    service's `session_id` parameter). `session_id` is honoured; any other key is refused with
    `Forbidden` naming it, even when the value equals the authenticated one, so a client that
    believes it can choose its user learns otherwise at once instead of silently "working".
    The result always has the same `fingerprint` as `identity`.

    Content (bodies, metadata, prompts, memory text) is never passed here: it is not identity.
    """
    if requested is None:
        return identity
    if not isinstance(requested, Mapping):
        raise InvalidIdentityInput(f"narrow() takes a mapping of requested fields, not a {type(requested).__name__}")
    if not requested:
        return identity
    refused = sorted(_field_name(k) for k in requested if not (isinstance(k, str) and k in NARROWABLE_FIELDS))
    if refused:
        raise Forbidden(
            f"a request may only choose session_id; it tried to set {', '.join(refused)} "
            "(identity comes from the credential)"
        )
    session_id = requested.get("session_id")
    if session_id is None:
        return identity
    refuse_default_namespace(session_id, "the request")
    try:
        return identity.with_session(session_id)  # type: ignore[arg-type]
    except InvalidIdError as exc:
        raise Forbidden(f"requested session_id is not a valid id: {exc.rule}") from None
