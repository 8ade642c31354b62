"""Settings of the HTTP service (`VIKING_BRIDGE_SERVICE_*`), beside the bridge's and identity's.

    VIKING_BRIDGE_SERVICE_HOST                 127.0.0.1   bind address (loopback by default)
    VIKING_BRIDGE_SERVICE_PORT                 8080
    VIKING_BRIDGE_SERVICE_WORKERS              1           uvicorn worker processes
    VIKING_BRIDGE_SERVICE_PROVIDERS            ""          credential kinds accepted, comma-separated
                                                           from jwt, api_key, gateway (default: the
                                                           one VIKING_BRIDGE_PROVIDER names)
    VIKING_BRIDGE_SERVICE_NONCE_DB_PATH        <home>/gateway-nonces.sqlite3 (shared by workers)
    VIKING_BRIDGE_SERVICE_MAX_BODY_BYTES       1048576     larger bodies: 413
    VIKING_BRIDGE_SERVICE_MAX_QUERY_BYTES      8192        longer query strings: 414
    VIKING_BRIDGE_SERVICE_REQUEST_TIMEOUT_SECONDS 30       an operation running longer: 503
    VIKING_BRIDGE_SERVICE_HEADER_TIMEOUT_SECONDS 10        request line + headers not complete this long
                                                           after their first byte (or after connecting):
                                                           408 and the connection closed
    VIKING_BRIDGE_SERVICE_BODY_TIMEOUT_SECONDS 60          a body not complete this long after its headers:
                                                           408 and the connection closed
    VIKING_BRIDGE_SERVICE_MAX_HEADER_BYTES     65536       request line + headers larger: 431, closed
    VIKING_BRIDGE_SERVICE_MAX_HEADERS          100         more header lines: 431, closed
    VIKING_BRIDGE_SERVICE_RATE_PER_SECOND      50          token bucket refill per identity
    VIKING_BRIDGE_SERVICE_RATE_BURST           100         bucket size per identity (0: no limit)
    VIKING_BRIDGE_SERVICE_SHUTDOWN_GRACE_SECONDS 30        in-flight requests get this long on SIGTERM
    VIKING_BRIDGE_SERVICE_DOCS                 false       serve the interactive API page at /docs (no
                                                           credential; it loads Swagger UI from a public
                                                           CDN, so off unless a deployment wants it)
    VIKING_BRIDGE_SERVICE_PURGE_INTERVAL_SECONDS 0         purge expired memories this often (0: never)
    VIKING_BRIDGE_SERVICE_PURGE_API_KEYS       ""          comma-separated tenant-admin API keys, one per
                                                           tenant to purge (bridge/doors/http/maintenance.py);
                                                           or VIKING_BRIDGE_SERVICE_PURGE_API_KEYS_FILE, a file
                                                           holding them (identity/secret_files.py: both set,
                                                           or an unreadable file, fails naming the setting)

The development identity is never accepted by the service: a request without a credential is
a 401, whatever the mode.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from bridge.doors.connection import ReadLimits
from bridge.errors import ConfigurationError
from identity.secret_files import SecretFilesFromEnvironment, resolve_secret_files
from identity.settings import SettingPath

__all__ = ["ServiceSettings", "load_service_settings", "CredentialKind"]

CredentialKind = Literal["jwt", "api_key", "gateway"]
ENV_PREFIX = "VIKING_BRIDGE_SERVICE_"


def _split(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return value


class ServiceSettings(ReadLimits):
    """The read limits (header/body timeouts, header size and count) are inherited from
    `ReadLimits` (bridge/doors/connection.py), which the MCP door reads too."""

    model_config = SettingsConfigDict(env_prefix="VIKING_BRIDGE_SERVICE_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    workers: int = Field(1, ge=1, le=64)
    providers: Annotated[tuple[CredentialKind, ...], NoDecode, BeforeValidator(_split)] = ()
    nonce_db_path: SettingPath | None = None
    max_body_bytes: int = Field(1_048_576, ge=1024, le=64 * 1_048_576)
    max_query_bytes: int = Field(8192, ge=256, le=1_048_576)
    request_timeout_seconds: float = Field(30.0, gt=0, le=3600)
    rate_per_second: float = Field(50.0, gt=0, le=1_000_000)
    rate_burst: int = Field(100, ge=0, le=10_000_000)
    shutdown_grace_seconds: float = Field(30.0, ge=0, le=3600)
    purge_interval_seconds: float = Field(0.0, ge=0, le=7 * 86400)
    purge_api_keys: Annotated[tuple[SecretStr, ...], NoDecode, BeforeValidator(_split)] = ()
    #: at start, load the local store's partitions (largest scopes first) within this many MiB,
    #: in a thread while requests are served, so no user pays a scope's first read; 0: off
    warm_mb: int = Field(0, ge=0, le=1_048_576)
    #: /docs is unauthenticated, on the admin console's origin, and runs scripts from a public CDN:
    #: an opt-in (docs/openapi.json in the repository is the reference; /openapi.json stays served).
    docs: bool = False

    @model_validator(mode="before")
    @classmethod
    def _files(cls, data: Any) -> Any:
        return resolve_secret_files(cls, data, ENV_PREFIX)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource, file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, SecretFilesFromEnvironment(settings_cls, ENV_PREFIX))


def load_service_settings(**overrides: Any) -> ServiceSettings:
    try:
        return ServiceSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"VIKING_BRIDGE_SERVICE_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid service configuration: {problems}") from None
