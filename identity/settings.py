"""Identity configuration (pydantic-settings, env prefix `VIKING_BRIDGE_`) and `build_provider`.

Why: a wrong identity setup must fail at start-up, naming the setting, not deep inside the first
request — and production must be impossible to start on the development fallback. Nested models
per provider map to env vars with `__`, e.g. `VIKING_BRIDGE_JWT__ISSUER`. List settings accept a
comma-separated string or a JSON list. An optional env file (`.env` style) can be passed to
`load_settings`. Unknown `VIKING_BRIDGE_*` variables are ignored: other parts of the bridge share
the prefix.

    VIKING_BRIDGE_MODE            development (default) | production
    VIKING_BRIDGE_PROVIDER        jwt | api_key | gateway | dev   (default: dev in development,
                                  required in production)
    VIKING_BRIDGE_SESSION_DB_PATH SQLite file for session bindings (required in production)
    VIKING_BRIDGE_JWT__*          see `JwtSettings`
    VIKING_BRIDGE_API_KEYS__*     see `ApiKeySettings`
    VIKING_BRIDGE_GATEWAY__*      see `GatewaySettings`

Every secret (`VIKING_BRIDGE_GATEWAY__SECRET`, `__PREVIOUS_SECRETS`) may instead be read from a
file, `VIKING_BRIDGE_GATEWAY__SECRET_FILE=/run/secrets/...`: the one rule of every secret setting
(identity/secret_files.py). A value and a file both given, or a file that cannot be read or is
empty, fail at start-up naming the setting, never showing the secret. (JWTs are verified with
public keys only, never an HS* shared secret, so the JWT settings hold no secret; API keys live
hashed in their store, not in settings.)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from identity.errors import ConfigurationError, IdentityConfigurationError
from identity.state.nonces import DEFAULT_MAX_NONCES, InMemoryNonceCache, SqliteNonceCache
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore
from identity.providers.base import IdentityProvider
from identity.secret_files import resolve_secret_files
from identity.providers.dev import PRODUCTION_ADVICE, DevEnvironmentProvider, resolve_mode
from identity.providers.gateway import MIN_SECRET_BYTES, GatewayProvider
from identity.providers.jwks import ASYMMETRIC_ALGORITHMS, JwksCache, StaticKeys, VerificationKey
from identity.providers.jwt import ClaimMapping, JwtProvider
from identity.sessions import InMemorySessionRegistry, SessionRegistry, SqliteSessionRegistry
from identity.state.protocols import NonceCache

__all__ = [
    "ApiKeySettings",
    "ClaimSettings",
    "GatewaySettings",
    "IdentitySettings",
    "JwtSettings",
    "SettingPath",
    "build_provider",
    "build_session_registry",
    "load_settings",
]


class InvalidSetting(IdentityConfigurationError, ValueError):
    """Raised inside a settings validator (pydantic collects `ValueError`s); `load_settings`
    reports every one as one `IdentityConfigurationError` naming the variables."""

ENV_PREFIX = "VIKING_BRIDGE_"


def _split(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [item.strip() for item in text.split(",") if item.strip()]
    return value


CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_split)]
"""A list setting: `a,b,c` or `["a","b","c"]`."""

_UNEXPANDED = re.compile(r"\$\{[^}]*\}?|^\$[A-Za-z_][A-Za-z0-9_]*|^%[A-Za-z_][A-Za-z0-9_]*%$")


def _path_setting(value: Any) -> Any:
    """A path setting as given: an empty value (what a host writes for an unset `${VAR}`) or one
    still holding a `${...}` / `$VAR` reference is refused here, while the settings load, so
    nothing acts on `Path("")` — which is the working directory — before the mistake is seen."""
    if isinstance(value, (str, Path)):
        text = str(value)
        if not text.strip():
            raise InvalidSetting("is empty: give a file path (an unset ${VARIABLE} in the host's config expands to nothing)")
        found = _UNEXPANDED.search(text)
        if found:
            raise InvalidSetting(f"holds an unexpanded variable reference {found.group(0)!r}: the host did not substitute it")
    return value


SettingPath = Annotated[Path, BeforeValidator(_path_setting)]
"""A file or directory setting: never empty, never an unexpanded `${...}` (see `_path_setting`)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClaimSettings(_Section):
    """Claim names per identity field; several names = alternatives, first present wins."""

    tenant_id: CommaList = ("tid",)
    user_id: CommaList = ("sub",)
    department_ids: CommaList = ("groups",)
    workspace_id: CommaList = ()
    agent_id: CommaList = ("azp", "client_id")
    roles: CommaList = ("roles",)
    session_id: CommaList = ()
    permission_version: CommaList = ()
    task_id: CommaList = ()  # the task a token is scoped to (seed 000 level 3: task memory); empty: none

    @field_validator("user_id", "agent_id")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise InvalidSetting("at least one claim name is required")
        return value

    def mapping(self) -> ClaimMapping:
        return ClaimMapping(**{name: (getattr(self, name) or None) for name in type(self).model_fields})


class JwtSettings(_Section):
    """`VIKING_BRIDGE_JWT__*`. Exactly one key source: `jwks_url`, `public_key_pem` or `public_key_file`."""

    issuer: CommaList
    audience: CommaList
    jwks_url: str | None = None
    public_key_pem: str | None = None
    public_key_file: SettingPath | None = None
    algorithms: CommaList = tuple(sorted(ASYMMETRIC_ALGORITHMS))
    required_claims: CommaList = ()
    leeway_seconds: float = Field(30.0, ge=0, le=300)
    jwks_min_refresh_seconds: float = Field(60.0, gt=0)
    jwks_max_age_seconds: float = Field(3600.0, gt=0)
    default_tenant_id: str | None = None
    default_agent_id: str | None = None
    claims: ClaimSettings = ClaimSettings()
    #: a PEM private key matching the verification key, for `viking-bridge dev-token` in
    #: development mode only (identity/devtoken.py); the provider itself never reads it
    dev_signing_key_file: Path | None = None

    @field_validator("issuer", "audience")
    @classmethod
    def _required(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise InvalidSetting("must not be empty")
        return value

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        refused = sorted(set(value) - ASYMMETRIC_ALGORITHMS)
        if refused:
            raise InvalidSetting(f"{refused} not allowed; choose from {sorted(ASYMMETRIC_ALGORITHMS)} (never none or HS*)")
        if not value:
            raise InvalidSetting("at least one algorithm is required")
        return value

    @field_validator("jwks_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise InvalidSetting("must be an http(s) URL")
        return value


class ApiKeySettings(_Section):
    """`VIKING_BRIDGE_API_KEYS__DB_PATH`: the SQLite file `python -m identity.admin` writes to."""

    db_path: SettingPath


class GatewaySettings(_Section):
    """`VIKING_BRIDGE_GATEWAY__*`. Secrets: at least 32 bytes; `previous_secrets` during rotation;
    each may come from a file (`__SECRET_FILE`, `__PREVIOUS_SECRETS_FILE`, comma-separated)."""

    secret: SecretStr
    previous_secrets: Annotated[tuple[SecretStr, ...], NoDecode, BeforeValidator(_split)] = ()
    max_age_seconds: float = Field(300.0, gt=0, le=3600)
    max_future_skew_seconds: float = Field(30.0, ge=0, le=300)
    require_nonce: bool = True  # safe by default: a signed request without a fresh nonce could be replayed
    require_body_hash: bool = True  # safe by default: a signature without the body digest would carry any body
    #: A SQLite replay cache shared by the processes of one host (default: in-process only).
    nonce_db_path: SettingPath | None = None
    #: Hard cap on live nonces remembered; beyond it new requests get a retryable 503, never a pass.
    max_live_nonces: int = Field(DEFAULT_MAX_NONCES, ge=1, le=50_000_000)

    @model_validator(mode="before")
    @classmethod
    def _files(cls, data: Any) -> Any:
        return resolve_secret_files(cls, data, ENV_PREFIX + "GATEWAY__")

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value().encode()) < MIN_SECRET_BYTES:
            raise InvalidSetting(f"must be at least {MIN_SECRET_BYTES} bytes (e.g. `openssl rand -hex 32`)")
        return value


ProviderName = Literal["jwt", "api_key", "gateway", "dev"]


class IdentitySettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore", frozen=True
    )

    mode: Literal["development", "production"] = "development"
    provider: ProviderName | None = None
    session_db_path: SettingPath | None = None
    jwt: JwtSettings | None = None
    api_keys: ApiKeySettings | None = None
    gateway: GatewaySettings | None = None

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        return resolve_mode(value) if isinstance(value, str) else value


def _env_name(loc: tuple[Any, ...]) -> str:
    return ENV_PREFIX + "__".join(str(part).upper() for part in loc if not isinstance(part, int))


_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")  # a host's unexpanded ${NAME}; a bare $ may be in a secret


def refuse_placeholders(environ: Mapping[str, str] | None = None, prefix: str = "VIKING_BRIDGE_") -> None:
    """`IdentityConfigurationError` naming every `prefix*` variable whose value still holds a
    `${NAME}` placeholder a host config did not expand. Checked before anything is
    opened, so a home literally named `${VIKING_BRIDGE_HOME}` is never created."""
    env = os.environ if environ is None else environ
    bad = sorted(name for name, value in env.items() if name.startswith(prefix) and isinstance(value, str) and _PLACEHOLDER.search(value))
    if bad:
        raise IdentityConfigurationError(
            f"unexpanded placeholder in {', '.join(bad)}: the host passed a literal ${{...}} instead of a value; set them to real values"
        )


def load_settings(env_file: str | Path | None = None, **overrides: Any) -> IdentitySettings:
    """Read settings from the environment (and `env_file`); errors name the variable."""
    refuse_placeholders()
    try:
        return IdentitySettings(_env_file=env_file, **overrides)  # type: ignore[call-arg]
    except ValidationError as exc:
        problems = "; ".join(f"{_env_name(err['loc'])}: {err['msg']}" for err in exc.errors())
        raise IdentityConfigurationError(f"invalid identity settings: {problems}") from None
    except (ConfigurationError, ValueError) as exc:  # a secret file's error names the setting, never the secret
        raise IdentityConfigurationError(f"invalid identity settings: {exc}") from None


def build_provider(
    settings: IdentitySettings,
    *,
    http_client: httpx.AsyncClient | None = None,
    environ: Mapping[str, str] | None = None,
) -> IdentityProvider:
    """The provider `settings` asks for; refuses the development fallback in production mode.

    `http_client` is used for JWKS fetches (a new `httpx.AsyncClient` if omitted); `environ`
    feeds the development provider (default `os.environ`).
    """
    provider = settings.provider
    if provider is None:
        if settings.mode == "production":
            raise IdentityConfigurationError(
                "no identity provider configured for production: set VIKING_BRIDGE_PROVIDER to jwt, api_key or gateway"
            )
        provider = "dev"
    if provider == "dev":
        if settings.mode == "production":
            raise IdentityConfigurationError(PRODUCTION_ADVICE)
        return DevEnvironmentProvider(environ, mode=settings.mode)
    if provider == "jwt":
        return _build_jwt(settings, http_client)
    if provider == "api_key":
        if settings.api_keys is None:
            raise IdentityConfigurationError("VIKING_BRIDGE_PROVIDER=api_key needs VIKING_BRIDGE_API_KEYS__DB_PATH")
        return ApiKeyProvider(ApiKeyStore(settings.api_keys.db_path))
    if provider == "gateway":
        gw = settings.gateway
        if gw is None:
            raise IdentityConfigurationError("VIKING_BRIDGE_PROVIDER=gateway needs VIKING_BRIDGE_GATEWAY__SECRET")
        nonces: NonceCache = (
            SqliteNonceCache(gw.nonce_db_path, max_entries=gw.max_live_nonces)
            if gw.nonce_db_path is not None
            else InMemoryNonceCache(max_entries=gw.max_live_nonces)
        )
        return GatewayProvider(
            [gw.secret.get_secret_value(), *(s.get_secret_value() for s in gw.previous_secrets)],
            max_age=gw.max_age_seconds,
            max_future_skew=gw.max_future_skew_seconds,
            nonce_cache=nonces,
            # production refuses unsigned-nonce requests: without a nonce a captured request replays
            require_nonce=gw.require_nonce or settings.mode == "production",
            # and without a signed body digest a captured request replays with any other body
            require_body_hash=gw.require_body_hash or settings.mode == "production",
        )
    raise IdentityConfigurationError(f"VIKING_BRIDGE_PROVIDER={provider!r} is unknown")  # pragma: no cover


def _build_jwt(settings: IdentitySettings, http_client: httpx.AsyncClient | None) -> JwtProvider:
    jwt = settings.jwt
    if jwt is None:
        raise IdentityConfigurationError(
            "VIKING_BRIDGE_PROVIDER=jwt needs VIKING_BRIDGE_JWT__ISSUER, VIKING_BRIDGE_JWT__AUDIENCE and a key "
            "source (VIKING_BRIDGE_JWT__JWKS_URL or VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM / __PUBLIC_KEY_FILE)"
        )
    sources = [n for n in ("jwks_url", "public_key_pem", "public_key_file") if getattr(jwt, n) is not None]
    if len(sources) != 1:
        raise IdentityConfigurationError(
            "configure exactly one of VIKING_BRIDGE_JWT__JWKS_URL, VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM, "
            f"VIKING_BRIDGE_JWT__PUBLIC_KEY_FILE (found: {', '.join(sources) or 'none'})"
        )
    if jwt.jwks_url is not None:
        if settings.mode == "production" and not jwt.jwks_url.startswith("https://"):
            raise IdentityConfigurationError("VIKING_BRIDGE_JWT__JWKS_URL must be https:// in production mode")
        keys: Any = JwksCache(
            jwt.jwks_url,
            http_client or httpx.AsyncClient(timeout=5.0),
            min_refresh_interval=jwt.jwks_min_refresh_seconds,
            max_age=jwt.jwks_max_age_seconds,
        )
    else:
        if jwt.public_key_file is not None:
            try:
                pem = jwt.public_key_file.read_bytes()
            except OSError as exc:
                raise IdentityConfigurationError(f"VIKING_BRIDGE_JWT__PUBLIC_KEY_FILE cannot be read: {exc}") from None
        else:
            pem = (jwt.public_key_pem or "").encode()
        keys = StaticKeys([VerificationKey.from_pem(pem)])
    return JwtProvider(
        keys=keys,
        issuer=jwt.issuer[0] if len(jwt.issuer) == 1 else jwt.issuer,
        audience=jwt.audience[0] if len(jwt.audience) == 1 else jwt.audience,
        claims=jwt.claims.mapping(),
        algorithms=jwt.algorithms,
        required_claims=jwt.required_claims,
        leeway=jwt.leeway_seconds,
        default_tenant_id=jwt.default_tenant_id,
        default_agent_id=jwt.default_agent_id,
    )


def build_session_registry(settings: IdentitySettings) -> SessionRegistry:
    """SQLite when `session_db_path` is set; in-memory only in development (a restart that
    forgets bindings would let anyone claim old session ids, so production requires a file)."""
    if settings.session_db_path is not None:
        return SqliteSessionRegistry(settings.session_db_path)
    if settings.mode == "production":
        raise IdentityConfigurationError("VIKING_BRIDGE_SESSION_DB_PATH is required in production mode")
    return InMemorySessionRegistry()


