"""The listings and the audit import a migration uses, on each of the three state stores (process
memory, SQLite, PostgreSQL): one tenant's records only, and each carried audit row exactly once
whatever the batches it arrives in — a batch repeated after a kill, or overlapping, adds nothing twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.scopes import ScopeKey
from bridge.state.common import CARRIED
from bridge.state.memory import MemoryState
from bridge.state.records import AuditEvent, AuditRecord, QuotaLimits, Usage
from bridge.state.sqlite import SqliteState
from contract_tests.postgres_server import TestDatabase

AGENT = ScopeKey.agent("acme", "wukong", "alice")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def state(request, tmp_path: Path):  # type: ignore[no-untyped-def]
    if request.param == "postgres":
        from bridge.state.postgres import PostgresState

        db: TestDatabase = request.getfixturevalue("pg_db")
        s = PostgresState(db.app_url, migrate_url=db.owner_url)
    else:
        s = SqliteState(tmp_path / "bridge.sqlite3") if request.param == "sqlite" else MemoryState()
    yield s
    await s.aclose()


def _row(seq: int, tenant: str = "acme") -> AuditRecord:
    event = AuditEvent(seq, 1000.0 + seq, tenant, f"{tenant}/alice@assistant", "s1", "recall", (f"m{seq}",), (str(AGENT),), ("g1",), {"n": seq})
    return AuditRecord(event, "alice", "fp")


async def test_audit_rows_are_imported_once_each_and_keep_what_they_said(state) -> None:  # type: ignore[no-untyped-def]
    assert await state.audit.import_rows([_row(1), _row(2), _row(3)], "sqlite:/old") == 3
    assert await state.audit.import_rows([_row(2), _row(3), _row(4), _row(4)], "sqlite:/old") == 1  # a repeated, overlapping batch
    assert await state.audit.import_rows([_row(1)], "sqlite:/elsewhere") == 1  # another origin is other rows
    await state.audit.import_rows([_row(9, "globex")], "sqlite:/old")
    rows = await state.audit.export_rows("acme")
    assert [(r.event.detail[CARRIED]["from"], r.event.detail[CARRIED]["seq"]) for r in rows] == [
        ("sqlite:/old", 1), ("sqlite:/old", 2), ("sqlite:/old", 3), ("sqlite:/old", 4), ("sqlite:/elsewhere", 1)]
    first = rows[0]
    assert (first.event.ts, first.event.actor, first.event.action, first.event.memory_ids, first.event.scopes, first.event.grant_ids, first.user_id) == (
        1001.0, "acme/alice@assistant", "recall", ("m1",), (str(AGENT),), ("g1",), "alice")
    assert first.event.detail["n"] == 1
    assert [r.event.seq for r in await state.audit.export_rows("acme", after_seq=rows[1].event.seq, limit=2)] == [r.event.seq for r in rows[2:4]]
    again = await state.audit.export_rows("acme", limit=1)
    assert await state.audit.import_rows(again, "sqlite:/second-hop") == 1
    hop = (await state.audit.export_rows("acme"))[-1].event.detail[CARRIED]
    assert hop["from"] == "sqlite:/second-hop" and hop["earlier"] == {"from": "sqlite:/old", "seq": 1}, "a second move keeps the first mark"


async def test_shares_teams_and_counters_are_listed_per_tenant(state) -> None:  # type: ignore[no-untyped-def]
    await state.shares.set_audience(AGENT, "m1", frozenset({"bajie", "sha"}), 5.0)
    await state.shares.set_audience(ScopeKey.agent("globex", "wukong", "alice"), "m2", frozenset({"bajie"}), 6.0)
    (share,) = await state.shares.of_tenant("acme")
    assert (share.scope, share.memory_id, share.audience, share.shared_at) == (AGENT, "m1", frozenset({"bajie", "sha"}), 5.0)
    await state.teams.set_members("acme", "red", frozenset({"wukong", "bajie"}))
    await state.teams.set_members("globex", "blue", frozenset({"mallory"}))
    assert await state.teams.of_tenant("acme") == {"red": frozenset({"wukong", "bajie"})}
    await state.usage.reserve("acme", "alice", Usage(2, 30), QuotaLimits(), QuotaLimits())
    await state.usage.reserve("globex", "gina", Usage(1, 5), QuotaLimits(), QuotaLimits())
    assert await state.usage.of_tenant("acme") == {"": Usage(2, 30), "alice": Usage(2, 30)}
