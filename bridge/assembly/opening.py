"""How a `MemoryBridge` is put together: the local default, any backend, or what the settings say.

    open_local(home)        the embedded default: store, bridge state, sessions under one home;
                            the store must be the one the state is bound to (bridge/writes/recovery.py)
    with_backend(b, home)   any backend with the bridge's own state in `home`
    from_settings()         what `VIKING_BRIDGE_*` describes: the backend the registry
                            (bridge/assembly/backends.py) names, with the bridge state under HOME,
                            or shared by several replicas on PostgreSQL (`VIKING_BRIDGE_STATE_URL`)
    open_state(settings)    just the bridge state the settings describe (migrate, the contract suite)

Every `VIKING_BRIDGE_*` setting applies unless a keyword argument gives it explicitly. The
functions take the class so subclasses of `MemoryBridge` build themselves; the class is handed
in rather than imported, so this module never imports the facade.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from adapters.base import MemoryBackend
from bridge.assembly.backends import OpenRequest, backend_entry
from bridge.assembly.settings import BridgeSettings, load_bridge_settings
from bridge.errors import ConfigurationError
from bridge.state.protocols import BridgeState
from identity.sessions import SessionBinder, SessionRegistry, SqliteSessionRegistry

__all__ = ["open_local", "with_backend", "from_settings", "open_state", "BridgeClass"]


class BridgeClass(Protocol):
    """What the openers build: `MemoryBridge` or a subclass (called with its parts)."""

    def __call__(self, backend: MemoryBackend, state: BridgeState | None = None, *, sessions: SessionRegistry | None = None, **options: Any) -> Any: ...


def open_state(settings: BridgeSettings, *, fsync_reads: bool = False, defer_reads: bool = True) -> BridgeState:
    """The bridge's own state: SQLite under HOME, or PostgreSQL shared by every replica."""
    if settings.state_url is None:
        from bridge.state.sqlite import SqliteState

        return SqliteState(Path(settings.home) / "bridge.sqlite3", fsync_reads=fsync_reads, defer_reads=defer_reads)
    try:
        from bridge.state.postgres import open_postgres_state
    except ImportError as exc:
        raise ConfigurationError(f"PostgreSQL needs its driver: pip install 'viking-bridge[postgres]' ({exc})") from None
    migrate = settings.state_migrate_url
    return open_postgres_state(
        settings.state_url.get_secret_value(), migrate_url=None if migrate is None else migrate.get_secret_value(),
        schema=settings.state_schema, fsync_reads=fsync_reads, defer_reads=defer_reads,
        intent_grace_s=settings.state_intent_grace_s,
    )


def _sessions(settings: BridgeSettings, state: BridgeState) -> SessionRegistry:
    repository = getattr(state, "session_repository", None)
    if settings.state_url is not None and repository is not None:
        return SessionBinder(repository())
    return SqliteSessionRegistry(Path(settings.home) / "sessions.sqlite3")


def from_settings(cls: BridgeClass, settings: BridgeSettings | None = None, **kwargs: Any) -> Any:
    """The bridge the settings describe: the backend `VIKING_BRIDGE_BACKEND` names in the
    registry, paired with the bridge state under HOME or on PostgreSQL."""
    settings = settings or load_bridge_settings()
    entry = backend_entry(settings.backend)
    if settings.state_url is not None and not entry.shareable:
        raise ConfigurationError(
            f"VIKING_BRIDGE_STATE_URL is shared by replicas, but VIKING_BRIDGE_BACKEND={entry.name} {entry.unshared_reason}: "
            "set VIKING_BRIDGE_BACKEND=postgres (memories on PostgreSQL too), or another shared backend"
        )
    if entry.name == "postgres" and settings.state_url is None:
        raise ConfigurationError("VIKING_BRIDGE_BACKEND=postgres needs VIKING_BRIDGE_STATE_URL (the bridge's state lives there too)")
    options = {**settings.runtime_options(), **kwargs}
    fsync_reads, defer_reads = options.pop("audit_fsync_reads", False), options.pop("audit_defer_reads", True)
    state = options.pop("state", None) or open_state(settings, fsync_reads=fsync_reads, defer_reads=defer_reads)
    request = OpenRequest(
        settings, state, embedder=options.pop("embedder", None), quarantined=options.setdefault("quarantined", []),
        reinitialise=bool(options.get("reinitialise")),
    )
    try:
        backend = entry.open(request)
        sessions = options.pop("sessions", None) or _sessions(settings, state)
    except BaseException:
        state.close()
        raise
    return cls(backend, state, sessions=sessions, **options)


def open_local(cls: BridgeClass, home: str | Path, **kwargs: Any) -> Any:
    """The embedded default: store, bridge state and session bindings under one directory.

    The store must be the one the bridge state is bound to (bridge/writes/recovery.py): a missing,
    emptied or replaced store raises `CorruptStorage` here, before anything is written."""
    settings = load_bridge_settings().model_copy(update={"home": Path(home), "backend": "local", "state_url": None})
    return from_settings(cls, settings, **kwargs)


def with_backend(cls: BridgeClass, backend: MemoryBackend, home: str | Path, **kwargs: Any) -> Any:
    """Any backend, with the bridge's own state (audit, grants, manifests, sessions) in
    `home`; every `VIKING_BRIDGE_*` setting applies unless given here explicitly."""
    settings = load_bridge_settings()
    options = {**settings.runtime_options(), **kwargs}
    home = Path(home)
    fsync_reads, defer_reads = options.pop("audit_fsync_reads", False), options.pop("audit_defer_reads", True)
    sessions = options.pop("sessions", None) or SqliteSessionRegistry(home / "sessions.sqlite3")
    state = options.pop("state", None)
    if state is None:
        from bridge.state.sqlite import SqliteState

        state = SqliteState(home / "bridge.sqlite3", fsync_reads=fsync_reads, defer_reads=defer_reads)
    return cls(backend, state, sessions=sessions, **options)
