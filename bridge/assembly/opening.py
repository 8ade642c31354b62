"""How a `MemoryBridge` is put together: the local default, any backend, or what the settings say.

    open_local(home)        the embedded default: store, bridge state, sessions under one home;
                            the store must be the one the state is bound to (bridge/writes/recovery.py)
    with_backend(b, home)   any backend with the bridge's own state in `home`
    from_settings()         what `VIKING_BRIDGE_*` describes: the local store, or shared state and
                            memories on PostgreSQL for several replicas (`VIKING_BRIDGE_STATE_URL`)

Every `VIKING_BRIDGE_*` setting applies unless a keyword argument gives it explicitly. The
functions take the class so subclasses of `MemoryBridge` build themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.base import MemoryBackend
from bridge.errors import ConfigurationError, CorruptStorage
from bridge.assembly.settings import BridgeSettings, load_bridge_settings
from bridge.state.sqlite import SqliteState
from identity.sessions import SqliteSessionRegistry

if TYPE_CHECKING:
    from bridge.facade import MemoryBridge

__all__ = ["open_local", "with_backend", "from_settings"]


def _defaults() -> dict[str, Any]:
    return load_bridge_settings().runtime_options()


def open_local(cls: type[MemoryBridge], home: str | Path, **kwargs: Any) -> MemoryBridge:
    """The embedded default: store, bridge state and session bindings under one directory.

    The store must be the one the bridge state is bound to (bridge/writes/recovery.py): a missing,
    emptied or replaced store raises `CorruptStorage` here, before anything is written."""
    from adapters.local import LocalBackend

    home = Path(home)
    options = {**_defaults(), **kwargs}
    state = SqliteState(home / "bridge.sqlite3", fsync_reads=options.pop("audit_fsync_reads", False))
    bound = None if options.get("reinitialise") else state.bound_store_id()
    quarantined: list[Any] = options.setdefault("quarantined", [])
    try:
        backend = LocalBackend(
            home / "store", embedder=options.pop("embedder", None) or load_bridge_settings().make_embedder(), expect_existing=bound is not None, expected_store_id=bound,
            on_quarantine=quarantined.append,
        )
    except CorruptStorage as exc:
        state.close()
        raise CorruptStorage(
            f"{exc}; the bridge state {state.path} is bound to store {bound}: restore that store, "
            "or re-initialise explicitly (--reinitialise)", path=exc.path,
        ) from None
    except BaseException:
        state.close()
        raise
    return _assemble(cls, backend, home, {**options, "state": state})

def with_backend(cls: type[MemoryBridge], backend: MemoryBackend, home: str | Path, **kwargs: Any) -> MemoryBridge:
    """Any backend, with the bridge's own state (audit, grants, manifests, sessions) in
    `home`; every `VIKING_BRIDGE_*` setting applies unless given here explicitly."""
    return _assemble(cls, backend, Path(home), {**_defaults(), **kwargs})

def _assemble(cls: type[MemoryBridge], backend: MemoryBackend, home: Path, options: dict[str, Any]) -> MemoryBridge:
    sessions = options.pop("sessions", None) or SqliteSessionRegistry(home / "sessions.sqlite3")
    fsync_reads = options.pop("audit_fsync_reads", False)
    state = options.pop("state", None) or SqliteState(home / "bridge.sqlite3", fsync_reads=fsync_reads)
    return cls(backend, state, sessions=sessions, **options)

def from_settings(cls: type[MemoryBridge], settings: BridgeSettings | None = None, **kwargs: Any) -> MemoryBridge:
    """The bridge the settings describe: the local store under `settings.home`, or with
    `VIKING_BRIDGE_STATE_URL` shared state and memories on PostgreSQL."""
    settings = settings or load_bridge_settings()
    options = {**settings.runtime_options(), **kwargs}
    if settings.state_url is None and settings.backend == "local":
        options.setdefault("embedder", settings.make_embedder())  # these settings', not the environment's
        return open_local(cls, settings.home, **options)
    return _open_postgres(cls, settings, options)

def _open_postgres(cls: type[MemoryBridge], settings: BridgeSettings, options: dict[str, Any]) -> MemoryBridge:
    """Shared state (and optionally memories) on PostgreSQL: what several replicas open."""
    secret = lambda v: None if v is None else v.get_secret_value()  # noqa: E731
    state_url = secret(settings.state_url)
    if state_url is None:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=postgres needs VIKING_BRIDGE_STATE_URL (the bridge's state lives there too)")
    if settings.backend == "local":
        raise ConfigurationError(
            "VIKING_BRIDGE_STATE_URL is shared by replicas, but VIKING_BRIDGE_BACKEND=local is one machine's store: "
            "set VIKING_BRIDGE_BACKEND=postgres (memories on PostgreSQL too)"
        )
    try:
        from adapters.postgres import PostgresBackend
        from bridge.state.postgres import open_postgres_state
    except ImportError as exc:
        raise ConfigurationError(f"PostgreSQL needs its driver: pip install 'viking-bridge[postgres]' ({exc})") from None
    from identity.sessions import SessionBinder

    migrate_url = secret(settings.state_migrate_url)
    state = open_postgres_state(
        state_url, migrate_url=migrate_url, schema=settings.state_schema,
        fsync_reads=options.pop("audit_fsync_reads", False), intent_grace_s=settings.state_intent_grace_s,
    )
    try:
        backend = PostgresBackend(
            secret(settings.memory_url) or state_url, migrate_url=migrate_url, schema=settings.state_schema,
            embedder=options.pop("embedder", None) or settings.make_embedder(),
        )
        backend.open_sync()
    except BaseException:
        state.close()
        raise
    return cls(backend, state, sessions=SessionBinder(state.session_repository()), **options)
