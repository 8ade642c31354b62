"""Identity asserted by a trusted gateway in signed `X-VB-*` headers.

Why: many deployments terminate authentication at an API gateway or service mesh (SSO proxy,
Envoy, Kong, an internal agent platform) that already knows who the caller is. It forwards the
identity as headers and signs them with a shared secret, so the bridge can tell "the gateway
said so" from "a client typed a header". Unsigned, altered, stale, future-dated or (with a
nonce cache) replayed requests are refused. Headers we do not sign — `X-User-Id`, `X-Tenant`,
anything else — are never read.

Canonical string (UTF-8), lines joined by `\\n`, absent values as empty lines:

    vb-gateway-v1
    <METHOD upper-case>
    <path as received, including the query string>
    <X-VB-Timestamp: unix seconds, decimal digits>
    <X-VB-Nonce>
    <X-VB-Tenant>
    <X-VB-User>
    <X-VB-Departments: comma-separated ids>
    <X-VB-Workspace>
    <X-VB-Agent>
    <X-VB-Roles: comma-separated ids>
    <X-VB-Session>
    <X-VB-Permission-Version>
    <X-VB-Content-SHA256: lowercase hex SHA-256 of the request body, or empty>

`X-VB-Signature` = lowercase hex HMAC-SHA256(secret, canonical string). Header values holding
CR or LF are refused before anything else, so the lines cannot be shifted.

Id values are percent-encoded UTF-8 on the wire (HTTP header values are ASCII in practice, and
ids may be `研发部`): `quote(id, safe="_-.@*+=~")`, so a literal `%` travels as `%25`. The
signature covers the values exactly as sent; they are decoded only after it verifies, and the
decoded id must then pass the id grammar.

The body digest binds the signature to the request body, so a captured signed request cannot be
replayed with another body inside the window: when `X-VB-Content-SHA256` is signed, the body given
(its digest, `GatewayRequest.content_sha256`) must match it; `require_body_hash` refuses requests
without one. The settings (`VIKING_BRIDGE_GATEWAY__REQUIRE_BODY_HASH`, `__REQUIRE_NONCE`) default
to requiring both, and production forces them; this class's own defaults stay lax for callers that
build it by hand and say what they want. The credential carries only the digest — identity never comes from the body.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from urllib.parse import quote, unquote

from identity.errors import ExpiredCredential, IdentityConfigurationError, InvalidCredential, Unauthenticated
from identity.model import MemoryIdentity
from identity.state.nonces import InMemoryNonceCache
from identity.providers.base import (
    GatewayRequest,
    credential_id,
    credential_ids,
    new_session_id,
    refuse_default_namespace,
    require_credential,
)
from identity.state.protocols import NonceCache

__all__ = ["GatewayProvider", "NonceCache", "SIGNED_HEADERS", "canonical_string", "encode_id", "sign_gateway_headers"]

CANONICAL_VERSION = "vb-gateway-v1"
H_TENANT, H_USER, H_DEPARTMENTS = "x-vb-tenant", "x-vb-user", "x-vb-departments"
H_WORKSPACE, H_AGENT, H_ROLES = "x-vb-workspace", "x-vb-agent", "x-vb-roles"
H_SESSION, H_VERSION = "x-vb-session", "x-vb-permission-version"
H_TIMESTAMP, H_NONCE, H_SIGNATURE = "x-vb-timestamp", "x-vb-nonce", "x-vb-signature"
H_CONTENT = "x-vb-content-sha256"
#: Seed 000 level 3. Signed, but outside the v1 line list: when present it is appended to the
#: canonical string as one more line, so signatures of gateways that never send it are unchanged.
H_TASK = "x-vb-task"
IDENTITY_HEADERS = (H_TENANT, H_USER, H_DEPARTMENTS, H_WORKSPACE, H_AGENT, H_ROLES, H_SESSION, H_VERSION)
SIGNED_HEADERS = (H_TIMESTAMP, H_NONCE, *IDENTITY_HEADERS, H_CONTENT)
_ALL_VB = frozenset((*SIGNED_HEADERS, H_TASK, H_SIGNATURE))
_NONCE = re.compile(r"[A-Za-z0-9_\-]{8,128}")
_HEX_SIG = re.compile(r"[0-9a-f]{64}")
MIN_SECRET_BYTES = 32


def canonical_string(method: str, path: str, values: Mapping[str, str]) -> str:
    """The exact text the gateway signs; `values` maps lower-case signed header names to values."""
    lines = [CANONICAL_VERSION, method.upper(), path, *(values.get(h, "") for h in SIGNED_HEADERS)]
    if values.get(H_TASK, ""):
        lines.append(f"{H_TASK}:{values[H_TASK]}")
    return "\n".join(lines)


def _sign(secret: bytes, text: str) -> str:
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


def sign_gateway_headers(
    secret: bytes | str,
    *,
    method: str,
    path: str,
    tenant_id: str,
    user_id: str,
    agent_id: str,
    department_ids: Iterable[str] = (),
    workspace_id: str | None = None,
    roles: Iterable[str] = (),
    session_id: str | None = None,
    permission_version: str | None = None,
    task_id: str | None = None,
    timestamp: int | None = None,
    nonce: str | None = None,
    body: bytes | None = None,
) -> dict[str, str]:
    """Reference signer: the headers a gateway must send. Used by tests and Python gateways."""
    key = secret.encode() if isinstance(secret, str) else secret
    values = {
        H_TIMESTAMP: str(int(time.time()) if timestamp is None else timestamp),
        H_TENANT: encode_id(tenant_id),
        H_USER: encode_id(user_id),
        H_AGENT: encode_id(agent_id),
        H_DEPARTMENTS: ",".join(encode_id(d) for d in sorted(department_ids)),
        H_ROLES: ",".join(encode_id(r) for r in sorted(roles)),
    }
    for name, value in ((H_WORKSPACE, workspace_id), (H_SESSION, session_id), (H_VERSION, permission_version), (H_TASK, task_id)):
        if value is not None:
            values[name] = encode_id(value)
    if nonce is not None:
        values[H_NONCE] = nonce
    if body is not None:
        values[H_CONTENT] = hashlib.sha256(body).hexdigest()
    headers = {_display(k): v for k, v in values.items() if v != ""}  # absent == empty when signing
    headers[_display(H_SIGNATURE)] = _sign(key, canonical_string(method, path, values))
    return headers


def encode_id(value: str) -> str:
    """Wire form of an id in an `X-VB-*` header: percent-encoded UTF-8 (`%` itself as `%25`)."""
    return quote(value, safe="_-.@*+=~")


def _decode_id(value: str, header: str) -> str:
    try:
        return unquote(value, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise InvalidCredential(f"header {_display(header)} is not percent-encoded UTF-8") from None


def _display(name: str) -> str:
    return "-".join(part.upper() if part in ("x", "vb") else part.capitalize() for part in name.split("-"))


def _header_items(headers: object) -> Iterable[tuple[object, object]]:
    multi = getattr(headers, "multi_items", None)
    if callable(multi):
        items: object = multi()
    elif isinstance(headers, Mapping):
        items = headers.items()
    elif isinstance(headers, Sequence) and not isinstance(headers, (str, bytes)):
        items = headers
    else:
        raise InvalidCredential("gateway request headers are not a mapping or a list of pairs")
    for item in items:  # type: ignore[attr-defined]
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidCredential("gateway request headers are not a mapping or a list of (name, value) pairs")
        yield item


def _header_text(raw: object, what: str) -> str:
    """A header name or value as text that survives UTF-8 (no lone surrogates); anything else
    (an int, None, a nested list, undecodable bytes) is a malformed credential, not a crash."""
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCredential(f"gateway header {what} is not UTF-8") from None
    if not isinstance(raw, str):
        raise InvalidCredential(f"gateway header {what} is a {type(raw).__name__}, not text")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidCredential(f"gateway header {what} holds characters that are not valid unicode (surrogates)") from None
    return raw


class GatewayProvider:
    """Verifies signed gateway headers. `secrets` lists the current secret first, then any
    previous ones still accepted during a rotation."""

    def __init__(
        self,
        secrets: bytes | str | Sequence[bytes | str],
        *,
        max_age: float = 300.0,
        max_future_skew: float = 30.0,
        nonce_cache: NonceCache | None = None,
        require_nonce: bool = False,
        require_body_hash: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        items = [secrets] if isinstance(secrets, (bytes, str)) else list(secrets)
        self._secrets = [s.encode() if isinstance(s, str) else bytes(s) for s in items]
        if not self._secrets:
            raise IdentityConfigurationError("gateway: at least one shared secret must be configured")
        if any(len(s) < MIN_SECRET_BYTES for s in self._secrets):
            raise IdentityConfigurationError(f"gateway: shared secrets must be at least {MIN_SECRET_BYTES} bytes")
        if max_age <= 0 or max_future_skew < 0:
            raise IdentityConfigurationError("gateway: max_age must be > 0 and max_future_skew >= 0")
        if nonce_cache is None:  # a presented nonce is always checked, required or not
            nonce_cache = InMemoryNonceCache(clock)
        self._max_age = max_age
        self._max_future_skew = max_future_skew
        self._nonces: NonceCache = nonce_cache
        self._require_nonce = require_nonce
        self._require_body_hash = require_body_hash
        self._clock = clock

    async def authenticate(self, credential: GatewayRequest) -> MemoryIdentity:
        require_credential(credential, GatewayRequest, "gateway provider")
        method = _header_text(credential.method, "method")
        path = _header_text(credential.path, "path")
        if credential.content_sha256 is not None:
            _header_text(credential.content_sha256, "body digest")
        values = self._vb_headers(credential.headers)
        if not any(h in values for h in IDENTITY_HEADERS):
            raise Unauthenticated("no gateway identity headers (X-VB-*) presented")
        signature = values.pop(H_SIGNATURE, None)
        if not signature:
            raise InvalidCredential("gateway identity headers are unsigned (no X-VB-Signature)")
        timestamp = values.get(H_TIMESTAMP, "")
        if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
            raise InvalidCredential("X-VB-Timestamp is missing or not unix seconds")
        expected = canonical_string(method, path, values)
        given = signature.strip().lower()
        if not _HEX_SIG.fullmatch(given) or not any(
            hmac.compare_digest(_sign(secret, expected), given) for secret in self._secrets
        ):
            raise InvalidCredential("gateway signature does not verify (headers, method or path altered, or wrong secret)")
        now = self._clock()
        age = now - int(timestamp)
        if age > self._max_age:
            raise ExpiredCredential(f"gateway request is stale ({int(age)} s old, window {int(self._max_age)} s)")
        if -age > self._max_future_skew:
            raise ExpiredCredential(f"gateway request is dated {int(-age)} s in the future")
        self._check_body(values.get(H_CONTENT), credential.content_sha256)
        await self._check_nonce(values.get(H_NONCE), int(timestamp))
        return self._identity(values)

    def _check_body(self, signed_digest: str | None, body_digest: str | None) -> None:
        if not signed_digest:
            if self._require_body_hash:
                raise InvalidCredential("gateway request has no X-VB-Content-SHA256 (required)")
            return
        if body_digest is None:
            raise InvalidCredential("X-VB-Content-SHA256 is signed but no body digest was given to check it against")
        if not hmac.compare_digest(body_digest.strip().lower(), signed_digest.strip().lower()):
            raise InvalidCredential("request body does not match the signed X-VB-Content-SHA256")

    def _vb_headers(self, headers: object) -> dict[str, str]:
        values: dict[str, str] = {}
        for raw_name, raw_value in _header_items(headers):
            name = raw_name.decode("latin-1") if isinstance(raw_name, bytes) else raw_name
            if not isinstance(name, str):
                raise InvalidCredential(f"gateway header name is a {type(name).__name__}, not text")
            key = name.strip().lower()
            if key not in _ALL_VB:
                continue  # unsigned headers (X-User-Id, X-Tenant, ...) are never read
            value = _header_text(raw_value, _display(key))
            if key in values:
                raise InvalidCredential(f"gateway header {_display(key)} appears more than once")
            if "\r" in value or "\n" in value:
                raise InvalidCredential(f"gateway header {_display(key)} contains a line break")
            values[key] = value
        return values

    async def _check_nonce(self, nonce: str | None, timestamp: int) -> None:
        if nonce is None or nonce == "":
            if self._require_nonce:
                raise InvalidCredential("gateway request has no X-VB-Nonce (required)")
            return
        if not _NONCE.fullmatch(nonce):
            raise InvalidCredential("X-VB-Nonce must be 8-128 characters of A-Z a-z 0-9 _ -")
        # live for as long as a request with this timestamp can be accepted, plus a second
        expires = timestamp + self._max_age + self._max_future_skew + 1
        if not await self._nonces.check_and_remember_async(nonce, expires):
            raise InvalidCredential("gateway request replayed (nonce already used)")

    @staticmethod
    def _identity(values: Mapping[str, str]) -> MemoryIdentity:
        def one(header: str, *, required: bool) -> str | None:
            value = values.get(header, "")
            if value == "":
                if required:
                    raise InvalidCredential(f"gateway header {_display(header)} is missing")
                return None
            return credential_id(_decode_id(value, header), f"header {_display(header)}")

        def many(header: str) -> frozenset[str]:
            value = values.get(header, "")
            items = [] if value == "" else [_decode_id(item, header) for item in value.split(",")]
            return credential_ids(items, f"header {_display(header)}")

        session = one(H_SESSION, required=False)
        refuse_default_namespace(session, f"header {H_SESSION}")
        return MemoryIdentity(
            tenant_id=one(H_TENANT, required=True),
            user_id=one(H_USER, required=True),
            agent_id=one(H_AGENT, required=True),
            workspace_id=one(H_WORKSPACE, required=False),
            session_id=session or new_session_id(),
            permission_version=one(H_VERSION, required=False),
            task_id=one(H_TASK, required=False),
            department_ids=many(H_DEPARTMENTS),
            roles=many(H_ROLES),
        )
