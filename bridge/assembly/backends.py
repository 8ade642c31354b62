"""The one registry of backends: name -> how its settings read -> how it is opened.

Every door asks this registry and nothing else — `open_bridge` and `MemoryBridge.from_settings`,
`viking-bridge serve`, `viking-bridge mcp`, the CLI, `migrate` (whose `KIND:WHERE` specs name an
entry) and the contract suite — so a backend is selectable everywhere or nowhere. Adding one is
its adapter folder (`adapters/<name>/`), its settings model in `bridge/assembly/settings.py` and
one `BackendEntry` below.

An opener gets the validated settings and the bridge state the backend is paired with, and
returns an open `MemoryBackend`. It never decides who may see what: the bridge above it does.
A backend it cannot open is a `ConfigurationError` naming the setting, raised at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from adapters.base import MemoryBackend
from bridge.assembly.settings import BridgeSettings
from bridge.errors import ConfigurationError, CorruptStorage
from bridge.state.protocols import BridgeState

__all__ = ["BackendEntry", "OpenRequest", "REGISTRY", "backend_entry", "backend_names", "register_backend"]


@dataclass
class OpenRequest:
    """What an opener gets: the settings, the paired bridge state, and the bridge's own knobs."""

    settings: BridgeSettings
    state: BridgeState
    embedder: Any = None
    #: where the backend reports records it took out of service (audited by the bridge)
    quarantined: list[Any] = field(default_factory=list)
    #: `--reinitialise`: bind a store that no longer matches its audit log (an explicit act only)
    reinitialise: bool = False
    #: a migration's source: the store must already exist (a mistyped path is an error, never a new store)
    must_exist: bool = False


@dataclass(frozen=True)
class BackendEntry:
    """One backend kind. `spec_settings` turns the WHERE of a `KIND:WHERE` migrate spec into the
    settings it stands for, as raw values validated like the environment's (secrets never appear
    in a spec: they come from the settings)."""

    name: str
    summary: str
    spec_usage: str  # "" for a kind no migrate spec names
    open: Callable[[OpenRequest], MemoryBackend]
    spec_settings: Callable[[str, BridgeSettings], dict[str, Any]]
    #: whether its memories may live beside shared PostgreSQL state (several replicas)
    shareable: bool = True
    #: why not, in the start-up error
    unshared_reason: str = "is one machine's store"


def _secret(value: Any) -> str | None:
    return None if value is None else value.get_secret_value()


# --- local: numpy + SQLite under one home -------------------------------------------------------

def _open_local(req: OpenRequest) -> MemoryBackend:
    from adapters.local import LocalBackend

    store = Path(req.settings.home) / "store"
    if req.must_exist and not store.is_dir():
        raise ConfigurationError(f"no local store at {store} (is the path right?)")
    bound = None if req.reinitialise else req.state.bound_store_id()
    try:
        return LocalBackend(
            store, embedder=req.embedder or req.settings.make_embedder(), expect_existing=bound is not None or req.must_exist,
            expected_store_id=bound, on_quarantine=req.quarantined.append,
        )
    except CorruptStorage as exc:
        raise CorruptStorage(
            f"{exc}; the bridge state {getattr(req.state, 'path', '')} is bound to store {bound}: restore that store, "
            "or re-initialise explicitly (--reinitialise)",
            path=exc.path,
        ) from None


def _local_spec(where: str, settings: BridgeSettings) -> dict[str, Any]:
    return {"home": Path(where), "backend": "local", "state_url": None}


# --- postgres: memories (with row-level security) on PostgreSQL ---------------------------------

def _open_postgres(req: OpenRequest) -> MemoryBackend:
    try:
        from adapters.postgres import PostgresBackend
    except ImportError as exc:
        raise ConfigurationError(f"PostgreSQL needs its driver: pip install 'viking-bridge[postgres]' ({exc})") from None
    s = req.settings
    url = _secret(s.memory_url) or _secret(s.state_url)
    if url is None:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=postgres needs VIKING_BRIDGE_MEMORY_URL or VIKING_BRIDGE_STATE_URL")
    # The state's owner URL migrates the memories only when they live in the state's database;
    # memories elsewhere (a shard) are migrated by their own owner URL, or by the runtime role.
    migrate = _secret(s.memory_migrate_url) or (_secret(s.state_migrate_url) if s.memory_url is None or s.memory_url == s.state_url else None)
    backend = PostgresBackend(url, migrate_url=migrate, schema=s.state_schema, embedder=req.embedder or s.make_embedder())
    backend.open_sync()
    return backend


def _postgres_spec(where: str, settings: BridgeSettings) -> dict[str, Any]:
    return {"backend": "postgres", "state_url": where, "memory_url": where}


# --- openviking: an OpenViking server ------------------------------------------------------------

def _open_openviking(req: OpenRequest) -> MemoryBackend:
    from adapters.openviking import OpenVikingBackend

    ov = req.settings.openviking
    if ov.url is None or ov.root_api_key is None:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=openviking needs VIKING_BRIDGE_OPENVIKING__URL and VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY")
    s = req.settings
    shared: Any = None
    if ov.mode == "api_key" and s.state_url is not None:
        # replicas share the bridge state, so they share the per-user keys too: minted once,
        # found by whichever replica serves the user next
        if ov.key_store_secret is None:
            raise ConfigurationError(
                "VIKING_BRIDGE_OPENVIKING__KEY_STORE_SECRET (a Fernet key) is needed: with VIKING_BRIDGE_STATE_URL the OpenViking "
                "user keys are kept on PostgreSQL, encrypted"
            )
        from adapters.openviking.keystore_postgres import PgKeyStore

        shared = PgKeyStore(
            s.state_url.get_secret_value(), encryption_key=ov.key_store_secret.get_secret_value(),
            migrate_url=_secret(s.state_migrate_url), schema=s.state_schema,
        )
    key_store = ov.key_store or Path(s.home) / "openviking-keys.json"
    if ov.mode == "api_key" and shared is None:
        key_store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        return OpenVikingBackend.connect(
            ov.url, ov.root_api_key.get_secret_value(), mode=ov.mode,
            key_store_path=str(key_store) if ov.mode == "api_key" and shared is None else None, key_store=shared,
            key_store_encryption_key=_secret(ov.key_store_secret), namespace=ov.namespace, timeout=ov.timeout_s,
        )
    except BaseException:
        if shared is not None:
            shared.close()
        raise


def _openviking_spec(where: str, settings: BridgeSettings) -> dict[str, Any]:
    return {"backend": "openviking", "openviking": {**settings.openviking.model_dump(), "url": where}}


# --- viking: hosted Viking Memory -----------------------------------------------------------------

def _open_viking(req: OpenRequest) -> MemoryBackend:
    from adapters.viking import ApiKeyAuth, SignerV4Auth, VikingBackend, VikingConfig, VikingMemoryClient
    from identity.ids import InvalidIdError

    s = req.settings
    v = s.viking
    if v.url is None:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=viking needs VIKING_BRIDGE_VIKING__URL")
    if not (v.collection or v.collections):
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=viking needs VIKING_BRIDGE_VIKING__COLLECTION (or per-tenant VIKING_BRIDGE_VIKING__COLLECTIONS)")
    if v.api_key is not None and (v.access_key is not None or v.secret_key is not None):
        raise ConfigurationError("VIKING_BRIDGE_VIKING__API_KEY and VIKING_BRIDGE_VIKING__ACCESS_KEY/__SECRET_KEY are both set: set one credential")
    if v.api_key is not None:
        auth: Any = ApiKeyAuth(v.api_key.get_secret_value())
    elif v.access_key is not None and v.secret_key is not None:
        auth = SignerV4Auth(v.access_key.get_secret_value(), v.secret_key.get_secret_value(), region=v.region)
    else:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=viking needs VIKING_BRIDGE_VIKING__API_KEY, or VIKING_BRIDGE_VIKING__ACCESS_KEY and __SECRET_KEY")
    # Every identity reads the global scope unless the deployment turns it off, and a scope with
    # no collection is refused by the adapter: say so at start-up, not on the first recall.
    global_collection = v.global_collection or v.collection
    if global_collection is None and s.include_global:
        raise ConfigurationError("VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION is needed (the global scope is read by every identity; or set VIKING_BRIDGE_INCLUDE_GLOBAL=false)")
    shared: Any = None
    if s.state_url is not None:  # replicas share the bridge state: the write ledger lives beside it
        from adapters.viking.ledger_postgres import PgWriteLedger

        shared = PgWriteLedger(s.state_url.get_secret_value(), migrate_url=_secret(s.state_migrate_url), schema=s.state_schema)
    ledger = v.ledger_dir or Path(s.home) / "viking"
    if shared is None:
        ledger.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        config = VikingConfig(
            collections=dict(v.collections), shared_collection=v.collection, global_collection=global_collection,
            event_type=v.event_type, extracted_event_types=tuple(dict.fromkeys((v.event_type, "sys_event_v1"))),
            principal_prefix=v.principal_prefix,
        )
    except InvalidIdError as exc:  # a tenant in COLLECTIONS that is not an id
        if shared is not None:
            shared.close()
        raise ConfigurationError(f"VIKING_BRIDGE_VIKING__COLLECTIONS: {exc}") from None
    client = VikingMemoryClient(v.url, auth, project_name=v.project, timeout=v.timeout_s)
    return VikingBackend(client, config, state_dir=None if shared is not None else ledger, ledger=shared)


def _viking_spec(where: str, settings: BridgeSettings) -> dict[str, Any]:
    """The deployment's state stays as set (HOME's SQLite, or STATE_URL's PostgreSQL, where the
    shared write ledger lives too), as for openviking: `migrate --state-only` carries the bridge
    state into the state the service opens, and a resumed copy consults the ledger it uses."""
    return {"backend": "viking", "viking": {**settings.viking.model_dump(), "url": where}}


# --- routed: several of the above, one per tenant (bridge/assembly/routes.py) ---------------------

def _open_routed(req: OpenRequest) -> MemoryBackend:
    from adapters.routing import RoutedBackend
    from bridge.assembly.routes import load_routes
    from bridge.assembly.settings import load_bridge_settings

    s = req.settings
    if s.routes_file is None:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=routed needs VIKING_BRIDGE_ROUTES_FILE (the routing table)")
    table = load_routes(s.routes_file)
    base = s.model_dump(exclude={"routes_file", "backend"})
    opened: dict[str, MemoryBackend] = {}
    homes: dict[Path, str] = {}
    try:
        for name, raw in table.backends.items():
            entry = backend_entry(raw["backend"])
            if s.state_url is not None and not entry.shareable:
                raise ConfigurationError(
                    f"VIKING_BRIDGE_ROUTES_FILE [backends.{name}]: VIKING_BRIDGE_STATE_URL is shared by replicas, but {entry.name} {entry.unshared_reason}"
                )
            fields = {"home": Path(s.home) / "backends" / name, **raw}
            settings = load_bridge_settings(**{**base, **fields})
            if entry.name == "local":  # two names on one store would put two routes' tenants in one place
                home = Path(settings.home).resolve()
                if home in homes:
                    raise ConfigurationError(f"VIKING_BRIDGE_ROUTES_FILE: backends {homes[home]} and {name} are one local store ({home})")
                homes[home] = name
            # A routed store is not bound to the bridge state the way a lone local store is (the
            # state records one store's marker): each opens as the store it finds.
            sub = OpenRequest(settings, req.state, embedder=req.embedder, quarantined=req.quarantined, reinitialise=True, must_exist=req.must_exist)
            opened[name] = entry.open(sub)
        return RoutedBackend(opened, table.tenants, global_home=table.global_home)
    except BaseException:
        import asyncio

        for backend in opened.values():
            try:
                asyncio.run(backend.aclose())
            except Exception:  # closing what was opened is best effort; the first error is the one to see
                pass
        raise


def _routed_spec(where: str, settings: BridgeSettings) -> dict[str, Any]:
    raise ConfigurationError("migrate names one backend at a time: migrate each backend of a routing table by its own spec (local:DIR, postgres:URL, ...)")


REGISTRY: dict[str, BackendEntry] = {}


def register_backend(entry: BackendEntry) -> None:
    """Add a backend kind (the built-ins below; a deployment may add its own at start-up)."""
    if entry.name in REGISTRY:
        raise ConfigurationError(f"backend {entry.name!r} is registered already")
    REGISTRY[entry.name] = entry


register_backend(BackendEntry("local", "the embedded store (numpy + SQLite) under VIKING_BRIDGE_HOME", "local:DIR", _open_local, _local_spec, shareable=False))
register_backend(BackendEntry("postgres", "memories on PostgreSQL (row-level security), shared by replicas", "postgres:URL", _open_postgres, _postgres_spec))
register_backend(BackendEntry("openviking", "an OpenViking server (api_key or trusted mode)", "openviking:URL", _open_openviking, _openviking_spec))
# Shareable: with VIKING_BRIDGE_STATE_URL the write ledger (idempotent retries) and OpenViking's
# per-user keys live on that PostgreSQL, so replicas neither add a write twice nor mint two keys.
register_backend(BackendEntry("viking", "hosted Viking Memory (collection, API key or AK/SK)", "viking:URL", _open_viking, _viking_spec))
# Shareable when every backend of its table is (checked as each is opened).
register_backend(BackendEntry("routed", "several backends, one per tenant, by VIKING_BRIDGE_ROUTES_FILE", "", _open_routed, _routed_spec))


def backend_names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def backend_entry(name: str) -> BackendEntry:
    """The entry for `name`, or a `ConfigurationError` listing what exists (never a default)."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise ConfigurationError(f"VIKING_BRIDGE_BACKEND={name!r}: unknown backend; expected one of {', '.join(REGISTRY)}")
    return entry
