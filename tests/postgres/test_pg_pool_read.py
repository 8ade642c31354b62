"""`PgPool.read`: the statements of one read share ONE transaction, and nothing outlives it.

The memory backend's recalls stand on this: the ScopeSet is declared with `set_config(..., true)`
(transaction-local) and row-level security reads it in the statements after it. If a read ever
ran them in separate transactions, the query would see no declaration at all (and the recall
would come back empty); if a declaration outlived its read, the next user of the connection would
inherit someone else's ScopeSet. Both are checked here on a real server, past psycopg's
prepare threshold (its prepared statements are sent in the same pipeline), with a failing
statement in the middle, and after the server dropped the pool's idle connection.
"""

from __future__ import annotations

import asyncio
from typing import Iterator

import psycopg
import pytest

from contract_tests.postgres_server import APP_ROLE, TestDatabase
from identity.errors import VikingBridgeError
from identity.storage.postgres import PgPool

DECLARE = "SELECT set_config('viking_bridge.scopes', %s, true)"
READ = "SELECT current_setting('viking_bridge.scopes', true)"
SAME_TXN = "SELECT pg_current_xact_id()::text, now()"


@pytest.fixture
def pool(pg_db: TestDatabase) -> Iterator[PgPool]:
    """One connection, so every read of a test reuses it."""
    opened = PgPool(pg_db.app_url, max_size=1)
    try:
        yield opened
    finally:
        opened.close()


def _left(pool: PgPool) -> object:
    """What a read that declares nothing sees of the scopes setting."""
    ((left,),) = asyncio.run(pool.read([(READ, None)]))[0]
    return left


def test_a_declaration_binds_the_statements_after_it_and_ends_with_the_read(pool: PgPool) -> None:
    for n in range(12):  # past psycopg's prepare threshold (5): prepared statements in the pipeline too
        declared, seen = asyncio.run(pool.read([(DECLARE, (f"scope-{n}",)), (READ, None)]))
        assert declared == [(f"scope-{n}",)] and seen == [(f"scope-{n}",)]
        assert _left(pool) in ("", None)  # a read that declares nothing sees nothing declared before it


def test_statements_of_one_read_run_in_one_transaction(pool: PgPool) -> None:
    for _ in range(8):
        first, second = asyncio.run(pool.read([(SAME_TXN, None), (SAME_TXN, None)]))
        assert first == second  # one transaction id, one transaction start time
        assert asyncio.run(pool.read([(SAME_TXN, None)]))[0] != first  # the next read is a transaction of its own


def test_a_failing_statement_fails_the_read_and_leaves_the_connection_usable(pool: PgPool) -> None:
    with pytest.raises(VikingBridgeError):
        asyncio.run(pool.read([(DECLARE, ("leaked?",)), ("SELECT 1 / 0", None), (READ, None)]))
    assert _left(pool) in ("", None)


def test_a_connection_the_server_dropped_while_idle_is_replaced_within_the_read(pool: PgPool, pg_db: TestDatabase) -> None:
    assert asyncio.run(pool.read([("SELECT 1", None)]))[0] == [(1,)]
    with psycopg.connect(pg_db.admin_url, autocommit=True) as admin:  # a server restart, as the idle connection sees it
        killed = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()"
                               " AND usename = %s", (APP_ROLE,)).fetchone()
    assert killed is not None and killed[0] >= 1
    assert asyncio.run(pool.read([("SELECT 2", None)]))[0] == [(2,)]


def test_a_read_sends_one_sync(pool: PgPool, monkeypatch: pytest.MonkeyPatch) -> None:
    """One Sync a read, one reply waited for: a second Sync (an explicit `pipeline.sync()` before
    the pipeline's own exit sends one) is a second round trip for nothing."""
    from psycopg import _pipeline_base

    if not psycopg.Pipeline.is_supported():
        pytest.skip("libpq without pipeline mode: a read is an explicit transaction, no Sync is queued by psycopg")
    sent: list[int] = []
    enqueue = _pipeline_base.BasePipeline._enqueue_sync

    def counted(self: object) -> None:
        sent.append(1)
        enqueue(self)  # type: ignore[arg-type]

    monkeypatch.setattr(_pipeline_base.BasePipeline, "_enqueue_sync", counted)
    for n in range(3):
        sent.clear()
        declared, seen = asyncio.run(pool.read([(DECLARE, (f"scope-{n}",)), (READ, None)]))
        assert declared == [(f"scope-{n}",)] and seen == [(f"scope-{n}",)]
        assert len(sent) == 1
