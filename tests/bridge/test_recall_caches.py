"""No cache on the recall path brings back a memory that is gone or moved, and recall audit rows
are group-committed without losing one.

The local store keeps decoded rows of recalled hits and its partitions in memory; the SQLite state
queues recall audit rows for a group commit (bridge/state/sqlite/read_rows.py). An oracle over
random remembers, edits, forgets and promotions (a memory moved to the workspace), made through
this bridge or through a second bridge on the same files (another process's view), checks every
recall of two users against what each may read right after each step: a forgotten memory, an
edit's old text or a promoted memory's old place never comes back.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from adapters.local import LocalBackend
from adapters.scopes import ScopeKey
from adapters.shared.embedding import HashingEmbedder
from bridge.facade import MemoryBridge
from bridge.state.records import AuditView
from bridge.state.sqlite import SqliteState
from identity.errors import StorageUnavailable
from tests.kit import make_identity

ALICE = make_identity("alice")
BOB = make_identity("bob")
ALICE_SCOPE = ScopeKey.private("acme", "alice")
BOB_SCOPE = ScopeKey.private("acme", "bob")


def _bridge(home: Path, *, defer_reads: bool = True) -> MemoryBridge:
    return MemoryBridge(LocalBackend(home / "store", HashingEmbedder()), SqliteState(home / "bridge.sqlite3", defer_reads=defer_reads))


def _recall_rows(path: Path) -> list[tuple[int, str]]:
    """The recall rows another connection sees (what another process would read)."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT seq, memory_ids FROM audit WHERE action = 'recall' ORDER BY seq").fetchall()


async def test_forgotten_edited_and_promoted_memories_never_come_back_from_a_cache(tmp_path: Path) -> None:
    reader = _bridge(tmp_path)
    await reader.aopen()
    other = _bridge(tmp_path)  # the same store and state, as a second worker process would open them
    await other.aopen()
    rng = random.Random(7)
    # memory id -> (owner, "private" | "workspace", content)
    oracle: dict[str, tuple[str, str, str]] = {}
    who = {"alice": ALICE, "bob": BOB}
    serial = 0
    for step in range(60):
        writer = rng.choice((reader, other))
        action = rng.random()
        if action < 0.4 or len(oracle) < 3:
            owner = rng.choice(("alice", "bob"))
            visibility = rng.choice(("private", "workspace"))
            serial += 1
            content = f"apple note {serial}"
            kind = "preference" if visibility == "private" else "fact"
            written = await writer.remember(who[owner], content, kind, visibility=visibility)
            oracle[written.memory_id] = (owner, visibility, content)
        else:
            mid = rng.choice(sorted(oracle))
            owner, visibility, content = oracle[mid]
            scope = f"acme/user/{owner}" if visibility == "private" else "acme/ws/alpha"
            if action < 0.6:
                assert await writer.forget(who[owner], (scope, mid))
                del oracle[mid]
            elif action < 0.8:
                serial += 1
                edited = f"apple note {serial} (edited)"
                await writer.edit_memory(who[owner], (scope, mid), content=edited)
                oracle[mid] = (owner, visibility, edited)
            elif visibility == "private":  # re-scoped: a copy in the workspace, the source superseded if the policy says so
                moved = await writer.promote(who[owner], (scope, mid), "workspace")
                if moved.status == "active":
                    oracle[moved.memory_id] = (owner, "workspace", content)
                if (await writer.backend.get(ALICE_SCOPE if owner == "alice" else BOB_SCOPE, mid)).status.value != "active":
                    del oracle[mid]
            else:
                continue
        for name, identity in who.items():
            result = await reader.recall(identity, "apple note", min_score=0.0)
            got = {i.memory_id: i.content for i in result.items}
            # the same text twice (a promoted copy beside its source) is one item naming its duplicate
            got.update({d.memory_id: i.content for i in result.items for d in i.duplicates})
            want = {mid: text for mid, (owner, vis, text) in oracle.items() if vis == "workspace" or owner == name}
            assert got == want, f"step {step}: {name} recalled {sorted(got.items())}, may read {sorted(want.items())}"
    await reader.aclose()
    await other.aclose()


async def test_recall_rows_are_group_committed_before_the_next_write_row_and_at_close(tmp_path: Path) -> None:
    bridge = _bridge(tmp_path)
    await bridge.remember(ALICE, "apple pie recipe", "preference", visibility="private")
    first = await bridge.recall(ALICE, "apple")
    second = await bridge.recall(ALICE, "apple")
    assert first.audit_seq is None and second.audit_seq is None  # queued: no seq yet
    state_file = tmp_path / "bridge.sqlite3"
    assert _recall_rows(state_file) == []  # not on disk yet: another process cannot see them
    written = await bridge.remember(ALICE, "apple tart", "preference", visibility="private")
    rows = _recall_rows(state_file)  # the write's own transaction carried them, ahead of its row
    assert len(rows) == 2 and all(first.items[0].memory_id in ids for _, ids in rows)
    with sqlite3.connect(state_file) as conn:
        (write_seq,) = conn.execute("SELECT seq FROM audit WHERE action = 'write' AND instr(memory_ids, ?) > 0", (written.memory_id,)).fetchone()
    assert max(seq for seq, _ in rows) < write_seq
    await bridge.recall(ALICE, "apple")
    assert len(_recall_rows(state_file)) == 2
    await bridge.aclose()
    assert len(_recall_rows(state_file)) == 3  # closing commits what was queued


async def test_a_full_queue_commits_and_a_failing_group_commit_fails_the_recall_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bridge = _bridge(tmp_path)
    audit = bridge.state.audit
    audit._reads.max_rows = 3
    await bridge.remember(ALICE, "apple pie recipe", "preference", visibility="private")
    for _ in range(3):
        await bridge.recall(ALICE, "apple")
    assert len(_recall_rows(tmp_path / "bridge.sqlite3")) == 3  # the third filled the queue and committed it
    real_insert = audit._insert

    def disk_full(conn, row):  # type: ignore[no-untyped-def]
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(audit, "_insert", disk_full)
    await bridge.recall(ALICE, "apple")
    await bridge.recall(ALICE, "apple")
    with pytest.raises(StorageUnavailable):  # the queue is full and cannot be committed: no answer
        await bridge.recall(ALICE, "apple")
    assert len(audit._reads.rows) == 3  # nothing dropped
    monkeypatch.setattr(audit, "_insert", real_insert)
    events = await bridge.audit_events(ALICE, action="recall", limit=100)  # a query commits the queue first
    assert len(events) == 6 and len(_recall_rows(tmp_path / "bridge.sqlite3")) == 6
    await bridge.aclose()


async def test_the_timer_commits_queued_rows_and_deferral_can_be_turned_off(tmp_path: Path) -> None:
    import asyncio

    bridge = _bridge(tmp_path / "deferred")
    bridge.state.audit._reads.max_delay_s = 0.01
    await bridge.remember(ALICE, "apple pie recipe", "preference", visibility="private")
    await bridge.recall(ALICE, "apple")
    for _ in range(200):  # the event loop runs the timer once the caller yields to it
        if _recall_rows(tmp_path / "deferred" / "bridge.sqlite3"):
            break
        await asyncio.sleep(0.01)
    assert len(_recall_rows(tmp_path / "deferred" / "bridge.sqlite3")) == 1
    await bridge.aclose()
    direct = _bridge(tmp_path / "direct", defer_reads=False)
    await direct.remember(ALICE, "apple pie recipe", "preference", visibility="private")
    result = await direct.recall(ALICE, "apple")
    assert result.audit_seq is not None and [seq for seq, _ in _recall_rows(tmp_path / "direct" / "bridge.sqlite3")] == [result.audit_seq]
    (event,) = await direct.state.audit.query(AuditView("acme", None), action="recall")
    assert event.seq == result.audit_seq
    await direct.aclose()
