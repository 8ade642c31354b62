"""PostgreSQL migrations (identity.storage.postgres.apply_pg_migrations): under an advisory lock, in
one transaction, never downgraded — the SQLite runner's guarantees, across machines."""

from __future__ import annotations

import threading

import psycopg
import pytest

from contract_tests.postgres_server import TestDatabase
from identity.errors import ConfigurationError, IncompatibleSchema
from identity.storage.postgres import migrate
from tests.postgres.pgkit import connect

SLOW = (
    # step 1 holds its transaction long enough that a racing opener certainly overlaps it
    "CREATE TABLE slow_a (n integer); SELECT pg_sleep(0.4); INSERT INTO slow_a VALUES (1);",
    "CREATE TABLE slow_b (n integer); GRANT SELECT ON slow_b TO {runtime};",
)


def test_two_openers_racing_on_a_fresh_database_migrate_exactly_once(pg_db: TestDatabase) -> None:
    barrier, applied, errors = threading.Barrier(2), [], []

    def opener() -> None:
        barrier.wait()
        try:
            applied.append(migrate(pg_db.owner_url, [("slow", SLOW)], runtime_role="vb_test_app")["slow"])
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(applied) == [0, 2], f"both openers migrated: {applied}"
    with connect(pg_db.owner_url) as conn:
        assert conn.execute("SELECT count(*) FROM slow_a").fetchone() == (1,)
        assert conn.execute("SELECT version FROM schema_version WHERE component = 'slow' ORDER BY version").fetchall() == [(1,), (2,)]


def test_current_schema_applies_nothing_and_a_later_step_applies_alone(pg_db: TestDatabase) -> None:
    assert migrate(pg_db.owner_url, [("c", SLOW[1:])], runtime_role="vb_test_app") == {"c": 1}
    assert migrate(pg_db.owner_url, [("c", SLOW[1:])], runtime_role="vb_test_app") == {"c": 0}
    assert migrate(pg_db.owner_url, [("c", (*SLOW[1:], "CREATE TABLE c2 (n integer);"))], runtime_role="vb_test_app") == {"c": 1}


def test_schema_newer_than_the_code_is_refused_and_nothing_written(pg_db: TestDatabase) -> None:
    migrate(pg_db.owner_url, [("c", ("CREATE TABLE one (n integer);", "CREATE TABLE two (n integer);"))], runtime_role="vb_test_app")
    with pytest.raises(IncompatibleSchema, match="newer release"):
        migrate(pg_db.owner_url, [("c", ("CREATE TABLE one (n integer);",))], runtime_role="vb_test_app")


def test_failed_step_leaves_the_schema_at_its_old_version(pg_db: TestDatabase) -> None:
    with pytest.raises(ConfigurationError):
        migrate(pg_db.owner_url, [("c", ("CREATE TABLE kept_out (n integer);", "THIS IS NOT SQL;"))], runtime_role="vb_test_app")
    with connect(pg_db.owner_url) as conn:
        assert conn.execute("SELECT to_regclass('kept_out')").fetchone() == (None,)
        assert conn.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)  # even the bookkeeping rolled back


def test_runtime_role_cannot_migrate(pg_db: TestDatabase) -> None:
    """The runtime role has no CREATE on the database: a replica started without the owner's URL
    cannot change the schema (it fails at start-up, naming the database, not mid-request)."""
    with pytest.raises(ConfigurationError) as err:
        migrate(pg_db.app_url, [("c", ("CREATE TABLE sneaky (n integer);",))], runtime_role="vb_test_app")
    assert "vb_test_owner" not in str(err.value) and pg_db.name in str(err.value)
    with psycopg.connect(pg_db.owner_url) as conn:
        assert conn.execute("SELECT to_regclass('viking_bridge.sneaky')").fetchone() == (None,)


async def test_replica_with_only_the_runtime_url_opens_a_migrated_database(pg_db: TestDatabase) -> None:
    """Deployments keep the owner's credentials out of the replicas: once the owner migrated,
    the runtime role opens state and store without any DDL right (no CREATE on the database)."""
    from adapters.postgres import PostgresBackend
    from bridge.state.postgres import PostgresState

    PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1).close()
    await (first := PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1)).open()
    await first.aclose()
    state = PostgresState(pg_db.app_url, pool_size=1)  # no migrate_url
    backend = PostgresBackend(pg_db.app_url, pool_size=1)
    try:
        await backend.open()
        assert not await state.audit.has_rows() and await backend.list_scopes("acme") == []
    finally:
        await backend.aclose()
        state.close()
