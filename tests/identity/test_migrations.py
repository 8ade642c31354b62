"""The migration runner: versioned schemas applied at open, once, in order, atomically."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest

from identity.errors import ConfigurationError, IncompatibleSchema, StorageUnavailable, Unavailable
from identity.storage.migrations import apply_migrations, describe, schema_version, split_statements
from identity.providers.api_keys import ApiKeyStore
from identity.sessions import SqliteSessionRegistry
from identity.storage.sqlite import connect_durable

V1 = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"
V2 = "ALTER TABLE notes ADD COLUMN author TEXT NOT NULL DEFAULT ''; CREATE INDEX notes_author ON notes(author)"


def _backfill_author(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE notes SET author = 'legacy' WHERE author = ''")


def _versions(path: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT component, version FROM schema_version ORDER BY component, version").fetchall()
    finally:
        conn.close()


def test_fresh_database_gets_every_step_once(tmp_path: Path) -> None:
    conn = connect_durable(tmp_path / "s.sqlite3")
    assert apply_migrations(conn, "notes", [V1, V2]) == 2
    assert schema_version(conn, "notes") == 2
    assert apply_migrations(conn, "notes", [V1, V2]) == 0  # idempotent at every open
    conn.execute("INSERT INTO notes (body, author) VALUES ('x', 'me')")
    conn.close()
    assert _versions(tmp_path / "s.sqlite3") == [("notes", 1), ("notes", 2)]


def test_old_schema_is_upgraded_in_place_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    conn = connect_durable(path)
    apply_migrations(conn, "notes", [V1])
    conn.execute("INSERT INTO notes (body) VALUES ('written by v1')")
    conn.close()

    conn = connect_durable(path)
    assert apply_migrations(conn, "notes", [V1, V2, _backfill_author]) == 2
    assert conn.execute("SELECT body, author FROM notes").fetchall() == [("written by v1", "legacy")]
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'notes_author'").fetchone() is not None
    conn.close()
    assert describe(path) == {"notes": 3}


def test_store_written_by_a_newer_release_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    conn = connect_durable(path)
    apply_migrations(conn, "notes", [V1, V2])
    conn.close()

    conn = connect_durable(path)
    with pytest.raises(IncompatibleSchema, match="version 2, but this code knows only up to 1") as err:
        apply_migrations(conn, "notes", [V1])
    assert isinstance(err.value, ConfigurationError)
    assert err.value.path == str(path) and str(path) in str(err.value)
    assert (err.value.found, err.value.known) == (2, 1)
    conn.close()
    assert _versions(path) == [("notes", 1), ("notes", 2)]  # nothing written


def test_failing_step_leaves_the_file_at_the_old_version(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    conn = connect_durable(path)
    apply_migrations(conn, "notes", [V1])
    broken = "CREATE TABLE half_done (x); INSERT INTO no_such_table VALUES (1)"
    with pytest.raises(ConfigurationError, match=r"migration 'notes' v2 failed.*nothing was changed") as err:
        apply_migrations(conn, "notes", [V1, broken, V2])
    assert str(path) in str(err.value)
    assert schema_version(conn, "notes") == 1
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    assert not conn.in_transaction
    conn.close()


def test_components_sharing_a_file_have_their_own_versions(tmp_path: Path) -> None:
    conn = connect_durable(tmp_path / "s.sqlite3")
    apply_migrations(conn, "notes", [V1, V2])
    apply_migrations(conn, "tags", ["CREATE TABLE tags (name TEXT PRIMARY KEY)"])
    assert (schema_version(conn, "notes"), schema_version(conn, "tags")) == (2, 1)
    conn.close()


def test_migration_that_is_neither_sql_nor_callable_is_a_configuration_error(tmp_path: Path) -> None:
    conn = connect_durable(tmp_path / "s.sqlite3")
    with pytest.raises(ConfigurationError, match="SQL text or a callable"):
        apply_migrations(conn, "notes", [42])  # type: ignore[list-item]
    assert schema_version(conn, "notes") == 0
    conn.close()


def test_statements_split_where_sqlite_says_they_end() -> None:
    script = "INSERT INTO t VALUES ('a;b');\nCREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;  ;"
    assert list(split_statements(script)) == [
        "INSERT INTO t VALUES ('a;b');",
        "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;",
    ]


def test_locked_store_is_a_retryable_storage_error_not_a_raw_sqlite_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    holder = connect_durable(path)
    holder.execute("BEGIN IMMEDIATE")
    conn = connect_durable(path, busy_timeout_s=0.05)
    with pytest.raises(StorageUnavailable, match="locked") as err:
        apply_migrations(conn, "notes", [V1])
    assert isinstance(err.value, Unavailable) and err.value.retryable and err.value.path == str(path)
    holder.execute("ROLLBACK")
    assert apply_migrations(conn, "notes", [V1]) == 1
    conn.close()
    holder.close()


# -- two processes opening one file at once ------------------------------------------------

def _slow_step(conn: sqlite3.Connection) -> None:
    # Not idempotent on purpose: running it twice would insert two rows (or fail on the table).
    conn.execute("CREATE TABLE applied_once (pid INTEGER)")
    conn.execute("INSERT INTO applied_once VALUES (?)", (multiprocessing.current_process().pid,))
    time.sleep(0.2)  # hold the write lock while the others knock


def _open_concurrently(path: str, barrier: multiprocessing.synchronize.Barrier, results: multiprocessing.Queue) -> None:
    try:
        conn = connect_durable(path, busy_timeout_s=30.0)
        barrier.wait(timeout=30)
        applied = apply_migrations(conn, "race", [V1, _slow_step])
        conn.close()
        results.put(("ok", applied))
    except BaseException as exc:  # report, so the parent's assertion shows what went wrong
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_processes_opening_at_once_apply_each_step_exactly_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    path = str(tmp_path / "shared.sqlite3")
    n = 4
    barrier = ctx.Barrier(n)
    results = ctx.Queue()
    procs = [ctx.Process(target=_open_concurrently, args=(path, barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert [kind for kind, _ in outcomes] == ["ok"] * n, outcomes
    assert sorted(applied for _, applied in outcomes) == [0] * (n - 1) + [2]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM applied_once").fetchone() == (1,)
    conn.close()
    assert _versions(Path(path)) == [("race", 1), ("race", 2)]


# -- the identity stores use it -------------------------------------------------------------

def test_api_key_store_created_before_migrations_is_adopted_and_keeps_its_keys(tmp_path: Path) -> None:
    from identity.state.sqlite import API_KEY_MIGRATIONS as MIGRATIONS

    path = tmp_path / "keys.sqlite3"
    store = ApiKeyStore(path)
    issued = store.issue(tenant_id="acme", user_id="alice", agent_id="cli")
    store.close()
    legacy = sqlite3.connect(path)  # what a pre-migration release left behind: no schema_version
    legacy.execute("DROP TABLE schema_version")
    legacy.commit()
    legacy.close()

    store = ApiKeyStore(path)
    assert store.verify(issued.key).user_id == "alice"
    store.close()
    assert describe(path) == {"api_keys": len(MIGRATIONS)}


def test_identity_stores_refuse_a_file_from_a_newer_release(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    SqliteSessionRegistry(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version VALUES ('session_bindings', 99, 0)")
    conn.commit()
    conn.close()
    with pytest.raises(IncompatibleSchema, match=str(path)):
        SqliteSessionRegistry(path)
