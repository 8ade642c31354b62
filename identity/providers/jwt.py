"""JWT / OIDC bearer tokens -> `MemoryIdentity`.

Why this exists: in an enterprise deployment the identity provider (Entra ID, Okta, Keycloak,
Auth0, ...) already knows the tenant, the user, their groups and the calling client. We verify
its signature (PyJWT; we never hand-roll signature checks), check `iss`, `aud`, `exp`/`nbf`
with a small leeway and any required claims, and map claims onto identity fields by
configuration. The agent is the OAuth client the token was issued to (`azp` / `client_id`),
never a request parameter.

The issuer is checked twice: by PyJWT and again here, as an exact string match against the
configured issuer(s). PyJWT 2.10.0 compared `iss` as a substring (CVE-2024-53861: a token from
`https://idp.example` passed for `https://idp.example.test/`); the dependency is pinned to a
fixed release and the import refuses an older one, but the exact check keeps us safe from the
next such regression too. A list-valued `iss` is refused.

What it must never do: accept `alg: none`, accept an algorithm its key type cannot produce
(HS256 signed with an RSA public key), fall back to an unverified decode, or read identity from
anything but verified claims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt

from identity.errors import ExpiredCredential, IdentityConfigurationError, InvalidCredential
from identity.model import MemoryIdentity
from identity.providers.base import (
    BearerToken,
    credential_id,
    credential_ids,
    new_session_id,
    refuse_default_namespace,
    require_credential,
)
from identity.providers.jwks import ASYMMETRIC_ALGORITHMS, KeySource

__all__ = ["ClaimMapping", "JwtProvider"]

_MAX_TOKEN_LENGTH = 16 * 1024
#: The first PyJWT release that compares `iss` exactly again (CVE-2024-53861 is in 2.10.0).
MIN_PYJWT = (2, 10, 1)


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


if _version_tuple(getattr(jwt, "__version__", "0")) < MIN_PYJWT:  # pragma: no cover - depends on the install
    raise IdentityConfigurationError(
        f"PyJWT {getattr(jwt, '__version__', '?')} is installed; viking-bridge needs >= "
        f"{'.'.join(map(str, MIN_PYJWT))} (CVE-2024-53861: issuer checked as a substring)"
    )


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@dataclass(frozen=True)
class ClaimMapping:
    """Which claim feeds which identity field. Each entry is a claim name or a list of names
    (the first one present wins). A name is looked up verbatim first (so URL-style custom
    claims like `https://acme.example/roles` work) and then as a dotted path into nested
    objects (`realm_access.roles`). `None` means "not taken from the token".
    """

    tenant_id: str | Sequence[str] | None = "tid"
    user_id: str | Sequence[str] = "sub"
    department_ids: str | Sequence[str] | None = "groups"
    workspace_id: str | Sequence[str] | None = None
    agent_id: str | Sequence[str] = ("azp", "client_id")
    roles: str | Sequence[str] | None = "roles"
    session_id: str | Sequence[str] | None = None
    permission_version: str | Sequence[str] | None = None
    task_id: str | Sequence[str] | None = None  # seed 000 level 3: e.g. "task_id" or "https://acme.example/task"


@dataclass
class JwtProvider:
    """Verifies bearer JWTs against a `KeySource` (a `JwksCache` or `StaticKeys`).

    `default_tenant_id` / `default_agent_id` are for deployments whose tokens carry no tenant
    (single-tenant IdP) or no client id; they come from configuration, never from a request.
    """

    keys: KeySource
    issuer: str | Sequence[str]
    audience: str | Sequence[str]
    claims: ClaimMapping = field(default_factory=ClaimMapping)
    algorithms: Iterable[str] = field(default_factory=lambda: sorted(ASYMMETRIC_ALGORITHMS))
    required_claims: Iterable[str] = ()
    leeway: float = 30.0
    default_tenant_id: str | None = None
    default_agent_id: str | None = None

    def __post_init__(self) -> None:
        self.algorithms = frozenset(self.algorithms)
        refused = self.algorithms - ASYMMETRIC_ALGORITHMS
        if refused:
            raise IdentityConfigurationError(
                f"JWT algorithms {sorted(refused)} are not allowed; choose from {sorted(ASYMMETRIC_ALGORITHMS)}"
            )
        if not self.algorithms:
            raise IdentityConfigurationError("JWT algorithms: at least one algorithm must be allowed")
        if not self.issuer:
            raise IdentityConfigurationError("JWT issuer must be configured")
        if not self.audience:
            raise IdentityConfigurationError("JWT audience must be configured")
        if not 0 <= self.leeway <= 300:
            raise IdentityConfigurationError("JWT leeway must be between 0 and 300 seconds")
        if self.claims.tenant_id is None and self.default_tenant_id is None:
            raise IdentityConfigurationError("JWT: map a tenant claim or configure default_tenant_id")
        for name, value in (("default_tenant_id", self.default_tenant_id), ("default_agent_id", self.default_agent_id)):
            if value is not None:
                try:
                    credential_id(value, name)
                except InvalidCredential as exc:
                    raise IdentityConfigurationError(f"JWT {name}: {exc}") from None
        self.required_claims = tuple(self.required_claims)

    async def authenticate(self, credential: BearerToken) -> MemoryIdentity:
        require_credential(credential, BearerToken, "JWT provider")
        claims = await self._verified_claims(credential.token)
        return self._identity(claims)

    # ------------------------------------------------------------------ verification
    async def _verified_claims(self, token: str) -> dict[str, Any]:
        if not isinstance(token, str) or not token or len(token) > _MAX_TOKEN_LENGTH or not token.isascii():
            raise InvalidCredential("malformed bearer token")  # a compact JWS is ASCII; surrogates end here
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, TypeError):
            raise InvalidCredential("malformed bearer token (header does not decode)") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidCredential(f"token algorithm {alg!r} is not allowed (allowed: {', '.join(sorted(self.algorithms))})")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidCredential("token kid is not a string")
        key = await self.keys.find(kid)
        if key is None:
            raise InvalidCredential(f"unknown signing key (kid={kid!r})" if kid else "token has no kid and the signing key is ambiguous")
        if alg not in key.algorithms:
            raise InvalidCredential(
                f"token algorithm {alg!r} does not match its key (kid={kid!r} allows {', '.join(sorted(key.algorithms))})"
            )
        required = sorted({"exp", "iss", "aud", *self.required_claims})
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=_names(self.audience) if not isinstance(self.audience, str) else self.audience,
                issuer=self.issuer if isinstance(self.issuer, str) else list(self.issuer),
                leeway=self.leeway,
                options={"require": required, "verify_signature": True},
            )
        except jwt.ExpiredSignatureError:
            raise ExpiredCredential("token has expired (exp)") from None
        except jwt.ImmatureSignatureError as exc:
            raise ExpiredCredential(f"token is not yet valid ({_which_time_claim(exc)})") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidCredential(f"token is missing required claim {exc.claim!r}") from None
        except jwt.InvalidAudienceError:
            raise InvalidCredential("token audience (aud) is not accepted") from None
        except jwt.InvalidIssuerError:
            raise InvalidCredential("token issuer (iss) is not accepted") from None
        except jwt.InvalidSignatureError:
            raise InvalidCredential("token signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise InvalidCredential(f"token rejected: {type(exc).__name__}") from None
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. a claim PyJWT cannot compare
            raise InvalidCredential(f"token rejected: malformed claims ({type(exc).__name__})") from None
        iss = claims.get("iss")
        if not isinstance(iss, str) or iss not in _names(self.issuer):
            raise InvalidCredential("token issuer (iss) is not accepted")
        return claims

    # ------------------------------------------------------------------ mapping
    def _identity(self, claims: Mapping[str, Any]) -> MemoryIdentity:
        m = self.claims
        tenant = self._scalar(claims, m.tenant_id, "tenant_id", default=self.default_tenant_id)
        user = self._scalar(claims, m.user_id, "user_id")
        agent = self._scalar(claims, m.agent_id, "agent_id", default=self.default_agent_id)
        workspace = self._scalar(claims, m.workspace_id, "workspace_id", optional=True)
        session = self._scalar(claims, m.session_id, "session_id", optional=True)
        refuse_default_namespace(session, "the token's session claim")
        session = session or new_session_id()
        version = self._scalar(claims, m.permission_version, "permission_version", optional=True)
        task = self._scalar(claims, m.task_id, "task_id", optional=True)
        return MemoryIdentity(
            task_id=task,
            tenant_id=tenant,
            user_id=user,
            agent_id=agent,
            workspace_id=workspace,
            session_id=session,
            permission_version=version,
            department_ids=self._list(claims, m.department_ids),
            roles=self._list(claims, m.roles),
        )

    @staticmethod
    def _lookup(claims: Mapping[str, Any], names: str | Sequence[str] | None) -> tuple[str | None, Any]:
        for name in _names(names):
            value = _claim(claims, name)
            if value is not None:
                return name, value
        return None, None

    def _scalar(
        self,
        claims: Mapping[str, Any],
        names: str | Sequence[str] | None,
        field_name: str,
        *,
        default: str | None = None,
        optional: bool = False,
    ) -> str | None:
        name, value = self._lookup(claims, names)
        if name is None:
            if default is not None:
                return default
            if optional:
                return None
            tried = ", ".join(_names(names)) or "(none configured)"
            raise InvalidCredential(f"token has no claim for {field_name} (tried {tried})")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and field_name == "permission_version":
            value = str(value)
        return credential_id(value, f"claim {name!r}")

    def _list(self, claims: Mapping[str, Any], names: str | Sequence[str] | None) -> frozenset[str]:
        name, value = self._lookup(claims, names)
        if name is None:
            return frozenset()
        if isinstance(value, str):
            value = value.split()  # OAuth convention: space-delimited (e.g. `scp`)
        if not isinstance(value, list):
            raise InvalidCredential(f"claim {name!r} must be a list of ids")
        return credential_ids(value, f"claim {name!r}")


def _claim(claims: Mapping[str, Any], name: str) -> Any:
    if name in claims:
        return claims[name]
    node: Any = claims
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _which_time_claim(exc: Exception) -> str:
    text = str(exc)
    return "iat" if "iat" in text else "nbf"
