"""The PostgreSQL state group-commits the audit rows of reads (bridge/state/postgres/read_rows.py)
as the SQLite state does: queued in the process, committed in one transaction by the size bound,
the timer, the next other audit row (ahead of it), an audit query, has_rows or export, and
close — never dropped, never reordered, and a full queue that cannot be committed fails the
recall. What another connection sees is read over a plain connection, not through the state."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

import psycopg
import pytest
import pytest_asyncio

import bridge.state.postgres.read_rows as pg_reads
from adapters.scopes import ScopeKey
from bridge.errors import StorageUnavailable
from bridge.state.postgres import PostgresState
from bridge.state.records import AuditView
from contract_tests.postgres_server import TestDatabase
from identity.model import MemoryIdentity
from tests.postgres.pgkit import as_app

ALICE = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="coder", session_id="s1")
SCOPE = ScopeKey.private("acme", "alice")
EVERYONE = AuditView("acme", None)


def _committed(db: TestDatabase) -> list[tuple[int, str, list[str]]]:
    """(seq, action, memory ids) of every committed row, as another process sees them."""
    with as_app(db) as conn:
        return [(int(seq), action, list(ids)) for seq, action, ids in conn.execute("SELECT seq, action, memory_ids FROM audit ORDER BY seq").fetchall()]


async def _recall(state: PostgresState, n: int) -> int | None:
    return await state.audit.append_read(ALICE, "recall", memory_ids=[f"m{n}"], scopes=[SCOPE], grant_ids=[None], detail={"n": n})


@pytest_asyncio.fixture
async def state(pg_db: TestDatabase) -> AsyncIterator[PostgresState]:
    s = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    try:
        yield s
    finally:
        s.close()


async def test_queued_rows_arrive_whole_and_in_order_at_a_query(state: PostgresState, pg_db: TestDatabase) -> None:
    assert [await _recall(state, n) for n in range(5)] == [None] * 5  # queued: no seq yet
    assert _committed(pg_db) == []  # nothing on the server: another replica cannot see them yet
    events = await state.audit.query(EVERYONE, action="recall")  # the process's own recalls first
    assert [e.memory_ids for e in reversed(events)] == [(f"m{n}",) for n in range(5)]
    assert [seq for seq, _, _ in _committed(pg_db)] == sorted(e.seq for e in events)
    first = events[-1]
    assert (first.actor, first.session_id, first.scopes, first.grant_ids, first.detail) == (ALICE.principal, "s1", (str(SCOPE),), (), {"n": 0})


async def test_has_rows_and_export_see_queued_recalls(state: PostgresState, pg_db: TestDatabase) -> None:
    await _recall(state, 1)
    assert await state.audit.has_rows()
    await _recall(state, 2)
    exported = await state.audit.export_rows("acme")
    assert [r.event.memory_ids for r in exported] == [("m1",), ("m2",)] and len(_committed(pg_db)) == 2


async def test_a_state_changing_row_carries_the_queued_reads_ahead_of_it(state: PostgresState, pg_db: TestDatabase) -> None:
    await _recall(state, 1)
    await _recall(state, 2)
    write_seq = await state.audit.append(ALICE, "write", memory_ids=["w"], scopes=[SCOPE])
    rows = _committed(pg_db)  # its own transaction committed them, before any query
    assert [(action, ids) for _, action, ids in rows] == [("recall", ["m1"]), ("recall", ["m2"]), ("write", ["w"])]
    assert rows[-1][0] == write_seq and max(seq for seq, action, _ in rows if action == "recall") < write_seq
    await _recall(state, 3)
    stored_seq = await state.audit.append_stored(ALICE, "write", memory_id="w2", scope=SCOPE, backend_key="k2", created=True,
                                                 closes_intent=await state.audit.begin_intent(ALICE, "write", SCOPE, "k2"))
    assert [(action, ids) for _, action, ids in _committed(pg_db)][-2:] == [("recall", ["m3"]), ("write", ["w2"])]
    assert _committed(pg_db)[-1][0] == stored_seq


async def test_the_size_bound_commits_and_the_timer_commits(state: PostgresState, pg_db: TestDatabase) -> None:
    reads = state.audit._reads
    assert reads is not None
    reads.max_rows, reads.max_delay_s = 3, 30.0
    await _recall(state, 1)
    await _recall(state, 2)
    assert _committed(pg_db) == []
    await _recall(state, 3)  # fills the queue: this call commits it
    assert [ids for _, _, ids in _committed(pg_db)] == [["m1"], ["m2"], ["m3"]] and reads.rows == []
    reads.max_delay_s = 0.01
    await _recall(state, 4)
    for _ in range(300):  # the loop runs the timer once this coroutine yields to it
        if len(_committed(pg_db)) == 4:
            break
        await asyncio.sleep(0.01)
    assert [ids for _, _, ids in _committed(pg_db)][-1] == ["m4"]


async def test_a_failing_group_commit_keeps_its_rows_and_a_full_queue_fails_the_recall(
    state: PostgresState, pg_db: TestDatabase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = state.audit._reads
    assert reads is not None
    reads.max_rows, reads.max_delay_s = 3, 30.0
    real_insert = pg_reads.insert_reads

    async def server_gone(conn, rows):  # type: ignore[no-untyped-def]
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(pg_reads, "insert_reads", server_gone)
    await _recall(state, 1)
    await _recall(state, 2)
    with pytest.raises(StorageUnavailable):  # the queue is full and cannot be committed: no answer
        await _recall(state, 3)
    with pytest.raises(StorageUnavailable):  # a write cannot go ahead of them either
        await state.audit.append(ALICE, "write", memory_ids=["w"])
    assert [r[7] for r in reads.rows] == [["m1"], ["m2"], ["m3"]] and _committed(pg_db) == []  # nothing dropped
    monkeypatch.setattr(pg_reads, "insert_reads", real_insert)
    await state.audit.append(ALICE, "write", memory_ids=["w"])  # the next trigger commits them, ahead of it
    assert [ids for _, _, ids in _committed(pg_db)] == [["m1"], ["m2"], ["m3"], ["w"]] and reads.rows == []


async def test_concurrent_triggers_carry_each_queued_row_once_in_order(state: PostgresState, pg_db: TestDatabase) -> None:
    reads = state.audit._reads
    assert reads is not None
    reads.max_rows, reads.max_delay_s = 4, 30.0

    async def recall_then_write(n: int) -> None:
        await _recall(state, n)
        if n % 5 == 0:
            await state.audit.append(ALICE, "write", memory_ids=[f"w{n}"])

    await asyncio.gather(*(recall_then_write(n) for n in range(40)))
    await state.audit.aflush()
    rows = _committed(pg_db)
    recalled = [ids[0] for _, action, ids in rows if action == "recall"]
    assert recalled == [f"m{n}" for n in range(40)]  # each once, in the order they were queued
    for n in range(0, 40, 5):  # each write after the recall its own task made before it
        assert recalled.index(f"m{n}") < [ids[0] for _, _, ids in rows].index(f"w{n}")


async def test_turned_off_each_read_row_commits_before_the_recall_returns(pg_db: TestDatabase) -> None:
    for options in ({"defer_reads": False}, {"fsync_reads": True}):
        state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2, **options)  # type: ignore[arg-type]
        try:
            assert state.audit._reads is None
            seq = await _recall(state, 1)
            assert seq is not None and _committed(pg_db)[-1] == (seq, "recall", ["m1"])
        finally:
            state.close()


async def test_closing_commits_the_queue(pg_db: TestDatabase) -> None:
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    await _recall(state, 1)
    await state.aclose()
    assert [ids for _, _, ids in _committed(pg_db)] == [["m1"]]
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    await _recall(state, 2)
    state.close()  # the blocking close too
    assert [ids for _, _, ids in _committed(pg_db)] == [["m1"], ["m2"]]
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    await _recall(state, 3)
    in_flight = asyncio.ensure_future(state.audit.aflush())  # as the timer starts it
    await asyncio.sleep(0)  # it has claimed m3 and is on the pool's thread
    await _recall(state, 4)
    await state.aclose()  # waits for that commit, then commits m4
    await in_flight
    assert [ids for _, _, ids in _committed(pg_db)] == [["m1"], ["m2"], ["m3"], ["m4"]]


def test_open_state_passes_defer_reads_to_the_postgresql_state(pg_db: TestDatabase, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from bridge.assembly.opening import open_state
    from bridge.assembly.settings import load_bridge_settings

    settings = load_bridge_settings(home=tmp_path, state_url=pg_db.app_url, state_migrate_url=pg_db.owner_url)
    for defer, queued in ((True, True), (False, False)):
        state = open_state(settings, defer_reads=defer)
        try:
            assert (state.audit._reads is not None) is queued  # type: ignore[attr-defined]
        finally:
            state.close()
