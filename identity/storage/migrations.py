"""Versioned schemas for every SQLite state store: `apply_migrations(conn, component, steps)`.

Why: a store's tables change between releases (a new column, an index, a table), and a file
written by release N must open under release N+1 without a manual step — and must *not* open
under release N-1, which would misread or damage it. So each store names itself (`component`,
e.g. "api_keys") and lists its migrations in order; step i (1-based) brings the schema from
version i-1 to i. The file records what was applied in one shared table:

    schema_version(component TEXT, version INTEGER, applied_at REAL, PRIMARY KEY (component, version))

Several components may share one file (the bridge keeps audit, grants and manifests together).

Guarantees:
- Idempotent at every open. A file already at the code's version costs one read and takes no
  write lock.
- Pending steps run in order inside ONE `BEGIN IMMEDIATE` transaction together with their
  version rows: after a crash the file is at the old version or the new one, never between. Two
  processes opening at once serialise on the write lock; the second re-reads the version inside
  its transaction, finds nothing pending and applies nothing twice.
- A recorded version newer than the code knows raises `IncompatibleSchema` naming the file;
  nothing is written. A step that fails rolls everything back and raises
  `ConfigurationError` naming the file, the component and the version.
- Pre-migration files (tables made by `CREATE TABLE IF NOT EXISTS`, no `schema_version`) are
  adopted: make migration 1 the old `CREATE TABLE IF NOT EXISTS`, and it is recorded as applied.

A step is SQL text (one or more `;`-separated statements, executed one by one inside the
transaction — never `executescript`, which would commit) or a callable taking the connection
(for data rewrites); a callable must not commit or roll back.

What it must never do: downgrade, skip a step, or apply a step outside the transaction.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from identity.errors import ConfigurationError, IdentityConfigurationError, IncompatibleSchema, VikingBridgeError
from identity.storage.sqlite import connect_durable, storage_error

__all__ = ["Migration", "apply_migrations", "database_path", "describe", "open_identity_store", "schema_version", "split_statements"]

Migration = str | Callable[[sqlite3.Connection], None]

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    component  TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    applied_at REAL    NOT NULL,
    PRIMARY KEY (component, version)
)
"""


def database_path(conn: sqlite3.Connection) -> str:
    """The file behind `conn`'s main database ("" for an in-memory one), for error messages."""
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return file or ":memory:"
    return "?"


def split_statements(script: str) -> Iterator[str]:
    """The statements of `script`, split where SQLite says a statement is complete (so a `;`
    inside a string literal or a trigger body does not split it)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                yield pending.strip()
            pending = ""
    if pending.strip(" \t\r\n;"):
        yield pending.strip().rstrip(";")


def schema_version(conn: sqlite3.Connection, component: str) -> int:
    """The highest version recorded for `component` (0: never migrated, or no table yet)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version WHERE component = ?", (component,)).fetchone()
    return int(row[0] or 0)


def _too_new(conn: sqlite3.Connection, component: str, found: int, known: int) -> IncompatibleSchema:
    path = database_path(conn)
    return IncompatibleSchema(
        f"{path}: the {component!r} schema is at version {found}, but this code knows only up to {known}; "
        "it was written by a newer release of viking-bridge (upgrade, or restore a backup made by this one)",
        path=path, component=component, found=found, known=known,
    )


def apply_migrations(conn: sqlite3.Connection, component: str, migrations: Sequence[Migration]) -> int:
    """Bring `component`'s schema in the file behind `conn` up to `len(migrations)`; return the
    number of steps applied now (0 when already current). `conn` must be in autocommit mode
    (`isolation_level=None`, as `connect_durable` makes it) and not inside a transaction."""
    if not isinstance(component, str) or not component:
        raise ConfigurationError("apply_migrations: component must be a non-empty string")
    target = len(migrations)
    try:
        current = schema_version(conn, component)  # fast path: no write lock when current
        if current == target:
            return 0
        if current > target:
            raise _too_new(conn, component, current, target)
        if conn.in_transaction:
            raise ConfigurationError(f"apply_migrations({component!r}) called inside an open transaction")
        conn.execute("BEGIN IMMEDIATE")
    except VikingBridgeError:
        raise
    except sqlite3.Error as exc:
        raise storage_error(exc, database_path(conn), f"{component!r} store") from None
    applied = 0
    try:
        conn.execute(_CREATE_TABLE)
        current = schema_version(conn, component)  # again, under the lock: another process may have won
        if current > target:
            raise _too_new(conn, component, current, target)
        for version in range(current + 1, target + 1):
            _run_step(conn, component, version, migrations[version - 1])
            conn.execute(
                "INSERT INTO schema_version (component, version, applied_at) VALUES (?, ?, ?)",
                (component, version, time.time()),
            )
            applied += 1
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise storage_error(exc, database_path(conn), f"{component!r} store") from None
        raise
    return applied


def _run_step(conn: sqlite3.Connection, component: str, version: int, step: Migration) -> None:
    try:
        if isinstance(step, str):
            for statement in split_statements(step):
                conn.execute(statement)
        elif callable(step):
            step(conn)
        else:
            raise ConfigurationError(
                f"migration {component!r} v{version} is {type(step).__name__}; a migration is SQL text or a callable"
            )
        if not conn.in_transaction:
            raise ConfigurationError(f"migration {component!r} v{version} committed or rolled back on its own")
    except VikingBridgeError:
        raise
    except (sqlite3.Error, TypeError, ValueError) as exc:
        path = database_path(conn)
        raise ConfigurationError(
            f"{path}: migration {component!r} v{version} failed ({type(exc).__name__}: {exc}); nothing was changed"
        ) from exc


def describe(path: str | Path) -> dict[str, int]:
    """Every component's recorded version in the file at `path` (for `doctor`-style tooling)."""
    conn = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone() is None:
            return {}
        rows = conn.execute("SELECT component, MAX(version) FROM schema_version GROUP BY component").fetchall()
        return {component: int(version) for component, version in rows}
    finally:
        conn.close()


def open_identity_store(
    path: str | Path,
    component: str,
    migrations: Sequence[str | Callable[[sqlite3.Connection], None]],
    what: str,
) -> sqlite3.Connection:
    """`connect_durable` + the store's migrations; any failure is a start-up error naming the
    store, never a traceback from deep inside (`IdentityConfigurationError`, or the typed error
    `apply_migrations` raised: a schema newer than this code, a damaged file)."""
    try:
        conn = connect_durable(path, busy_timeout_s=5.0)
    except (sqlite3.Error, OSError) as exc:
        raise IdentityConfigurationError(f"{what} at {path} cannot be opened: {exc}") from None
    try:
        apply_migrations(conn, component, migrations)
    except BaseException:
        conn.close()
        raise
    return conn
