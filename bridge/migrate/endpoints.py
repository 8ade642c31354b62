"""Where a migration reads from and writes to: one backend named by a short spec.

    local:DIR              the embedded store of a bridge home (DIR/store, state DIR/bridge.sqlite3)
    postgres:URL           memories (and bridge state) on PostgreSQL; the owner URL for schema
                           migrations comes from VIKING_BRIDGE_STATE_MIGRATE_URL (default: URL)
    openviking:URL         an OpenViking server in api_key mode; the root key comes from
                           VIKING_BRIDGE_OPENVIKING_ROOT_KEY, the per-user key file from
                           VIKING_BRIDGE_OPENVIKING_KEY_FILE (its Fernet key from
                           VIKING_BRIDGE_OPENVIKING_KEY_FILE_SECRET), its account prefix
                           from VIKING_BRIDGE_OPENVIKING_NAMESPACE (default vb)

Secrets never appear in a spec (a spec is echoed in reports and audit rows). An endpoint may
carry the bridge state that belongs with it (local and postgres do), so the migration's audit
rows land where the target's operators will read them. Opening never creates a wider view than
the backend's own: a migration is an operator action with the storage's credentials, and every
write it makes is still a scoped `put`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

from adapters.base import MemoryBackend
from bridge.errors import ConfigurationError
from bridge.state.protocols import BridgeState

__all__ = ["Endpoint", "open_endpoint", "redact_spec"]

_KINDS = ("local", "postgres", "openviking")


@dataclass(frozen=True)
class Endpoint:
    """An opened backend plus, where the endpoint has one, the bridge state kept beside it."""

    spec: str  # as given, credentials redacted
    backend: MemoryBackend
    state: BridgeState | None


def redact_spec(spec: str) -> str:
    """The spec with any `user:password@` in a URL replaced, for reports and audit rows."""
    kind, _, rest = spec.partition(":")
    if "@" in rest and "//" in rest:
        scheme, _, tail = rest.partition("//")
        rest = f"{scheme}//***@{tail.rpartition('@')[2]}"
    return f"{kind}:{rest}"


def _env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ConfigurationError(f"{what}: set {name}")
    return value


@contextlib.asynccontextmanager
async def open_endpoint(spec: str, *, embedder: object | None = None) -> AsyncIterator[Endpoint]:
    """Open the backend `spec` names (see the module docstring); closed on exit.

    `embedder` (local and postgres only) is the embedder a *target* store is created with, so a
    migration into a new local store is also a re-embedding."""
    kind, sep, where = spec.partition(":")
    if not sep or kind not in _KINDS or not where:
        raise ConfigurationError(f"not a backend spec: {redact_spec(spec)!r} (expected one of {', '.join(k + ':...' for k in _KINDS)})")
    state = _state(kind, where)
    try:
        backend = _backend(kind, where, state, embedder)
    except BaseException:
        if state is not None:
            await state.aclose()
        raise
    try:
        yield Endpoint(redact_spec(spec), backend, state)
    finally:
        try:
            await backend.aclose()
        finally:
            if state is not None:
                await state.aclose()


def _postgres_options(url: str) -> tuple[str, str]:
    from identity.storage.postgres import DEFAULT_SCHEMA

    return os.environ.get("VIKING_BRIDGE_STATE_MIGRATE_URL") or url, os.environ.get("VIKING_BRIDGE_STATE_SCHEMA") or DEFAULT_SCHEMA


def _state(kind: str, where: str) -> BridgeState | None:
    """The bridge state kept beside the backend: a local home's SQLite, PostgreSQL's own."""
    if kind == "local":
        from bridge.state.sqlite import SqliteState

        Path(where).mkdir(parents=True, exist_ok=True)
        return SqliteState(Path(where) / "bridge.sqlite3")
    if kind == "postgres":
        try:
            from bridge.state.postgres import open_postgres_state
        except ImportError as exc:
            raise ConfigurationError(f"PostgreSQL needs its driver: pip install 'viking-bridge[postgres]' ({exc})") from None
        migrate_url, schema = _postgres_options(where)
        return open_postgres_state(where, migrate_url=migrate_url, schema=schema)
    return None


def _backend(kind: str, where: str, state: BridgeState | None, embedder: object | None) -> MemoryBackend:
    if kind == "local":
        from adapters.local import LocalBackend

        bound = state.bound_store_id() if state is not None else None  # type: ignore[attr-defined]
        return LocalBackend(Path(where) / "store", embedder=embedder, expect_existing=bound is not None, expected_store_id=bound)  # type: ignore[arg-type]
    if kind == "postgres":
        from adapters.postgres import PostgresBackend

        migrate_url, schema = _postgres_options(where)
        backend = PostgresBackend(where, migrate_url=migrate_url, schema=schema, embedder=embedder)  # type: ignore[arg-type]
        backend.open_sync()
        return backend
    from adapters.openviking import OpenVikingBackend

    root_key = _env("VIKING_BRIDGE_OPENVIKING_ROOT_KEY", "an OpenViking endpoint needs the server's root API key")
    key_file = _env("VIKING_BRIDGE_OPENVIKING_KEY_FILE", "an OpenViking endpoint needs the file that keeps the per-user keys it provisions")
    return OpenVikingBackend.connect(
        where, root_key, mode="api_key", key_store_path=key_file,
        key_store_encryption_key=os.environ.get("VIKING_BRIDGE_OPENVIKING_KEY_FILE_SECRET") or None,
        namespace=os.environ.get("VIKING_BRIDGE_OPENVIKING_NAMESPACE") or "vb",
    )
