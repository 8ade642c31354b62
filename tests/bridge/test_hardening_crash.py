"""Every stored memory has its audit row, and a store that is not
the one the audit log describes is refused.

Memory and audit live in two files with no atomic commit between them. A crash between
`backend.put` and the audit row leaves a durable write intent; the next open finds the write by
its idempotency key and audits it as `recovered` (an intent whose write never landed is closed,
with no audit row). A truncated or deleted store, or a deleted bridge state, is refused on
first use as `CorruptStorage` naming the files; only `reinitialise=True` gets past it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adapters.base import NewMemory, Provenance
from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from bridge.errors import CorruptStorage
from bridge.writes import backend_key
from tests.kit import make_identity

ALICE = make_identity()
PRIVATE = ScopeKey.private("acme", "alice")


class SimulatedCrash(BaseException):
    """The process dies here: not an Exception, so no cleanup handler of the bridge runs it down
    (and not KeyboardInterrupt, which asyncio would re-raise through the test runner)."""


def _crash_on_write_audit(b: MemoryBridge) -> None:
    # a stored memory's row is written by `append_stored` (one row per stored memory)
    real_append = b.state.audit.append_stored

    async def append(identity, action, **kwargs):
        if action == "write":
            raise SimulatedCrash()
        return await real_append(identity, action, **kwargs)

    b.state.audit.append_stored = append  # type: ignore[method-assign]


async def _recovered(b: MemoryBridge) -> list:
    return await b.audit_events(ALICE, action="recovered")


async def test_a_write_committed_before_a_crash_is_audited_as_recovered_at_reopen(tmp_path):
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    await b.remember(ALICE, "a write before the crash", "note")
    _crash_on_write_audit(b)
    with pytest.raises(SimulatedCrash):
        await b.remember(ALICE, "committed but never audited", "note", idempotency_key="req-7")
    landed = [m for m in await b.backend.list(PRIVATE) if m.content == "committed but never audited"]
    assert len(landed) == 1, "premise: the backend committed the write before the crash"
    assert len(await b.state.audit.open_intents()) == 1
    await b.aclose()

    reopened = MemoryBridge.open_local(home)
    try:
        (row,) = await _recovered(reopened)
        assert row.memory_ids == (landed[0].id,), f"the recovered row names {row.memory_ids}, not the landed memory {landed[0].id}"
        assert row.actor == ALICE.principal and row.scopes == (str(PRIVATE),) and row.detail["operation"] == "write"
        assert await reopened.state.audit.open_intents() == []
        every_audited = {mid for e in await reopened.audit_events(ALICE) for mid in e.memory_ids}
        assert {m.id for m in await reopened.backend.list(PRIVATE)} <= every_audited, "a stored memory has no audit row"
        again = await reopened.remember(ALICE, "committed but never audited", "note", idempotency_key="req-7")
        assert again.memory_id == landed[0].id and again.deduplicated  # the caller's retry finds it
    finally:
        await reopened.aclose()


async def test_an_intent_whose_write_never_landed_is_closed_without_an_audit_row(tmp_path):
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    await b.remember(ALICE, "an ordinary write", "note")
    key = backend_key(ALICE, PRIVATE, "never-sent", "note|lost in flight")
    await b.state.audit.begin_intent(ALICE, "write", PRIVATE, key)  # announced, then the process died
    rows_before = len(await b.audit_events(ALICE))
    await b.aclose()

    reopened = MemoryBridge.open_local(home)
    try:
        assert await _recovered(reopened) == []
        assert await reopened.state.audit.open_intents() == []
        assert len(await reopened.audit_events(ALICE)) == rows_before
    finally:
        await reopened.aclose()


async def test_a_hand_made_crash_through_the_backend_is_recovered(tmp_path):
    """The same without patching the bridge: intent, then backend.put, then nothing."""
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    await b.remember(ALICE, "first", "note")
    key = backend_key(ALICE, PRIVATE, "by-hand", "note|put by hand")
    await b.state.audit.begin_intent(ALICE, "write", PRIVATE, key)
    stored = await b.backend.put(PRIVATE, NewMemory("put by hand", "note", Provenance(author_user_id="alice", author_agent_id="assistant", session_id=ALICE.session_id)), idempotency_key=key)
    await b.aclose()
    reopened = MemoryBridge.open_local(home)
    try:
        (row,) = await _recovered(reopened)
        assert row.memory_ids == (stored.id,)
    finally:
        await reopened.aclose()


async def _promote(b: MemoryBridge):
    source = await b.remember(ALICE, "Use ruff for linting", "note")
    return "promote", lambda: b.promote(ALICE, source.ref, "tenant"), ScopeKey.tenant("acme")  # a pending proposal


async def _write_back(b: MemoryBridge):
    parent = make_identity(agent="orchestrator")
    m = await b.remember(parent, "plan: split the migration", "note", visibility="agent")
    manifest = await b.inject(parent, "worker", "migration", memory_refs=[m.ref])
    return "write", lambda: b.write_back(make_identity(agent="worker"), manifest.manifest_id, "Result: split in three", "note"), PRIVATE


async def _capture(b: MemoryBridge):
    return "write", lambda: b.capture(ALICE, [{"role": "user", "content": "I prefer green tea in the morning."}]), PRIVATE


@pytest.mark.parametrize("write_path", [_promote, _write_back, _capture], ids=["promote", "write_back", "capture"])
async def test_every_write_path_recovers_its_audit_row_after_a_crash(tmp_path, write_path):
    """Promotion, write-back and capture all store through the one
    write path, so a crash after the backend's commit is recovered for each of them too."""
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    action, call, scope = await write_path(b)
    before = {m.id for m in await b.backend.list(scope)}
    real_append = b.state.audit.append_stored  # the row of a stored memory

    async def append(identity, act, **kwargs):
        if act == action:
            raise SimulatedCrash()
        return await real_append(identity, act, **kwargs)

    b.state.audit.append_stored = append  # type: ignore[method-assign]
    with pytest.raises(SimulatedCrash):
        await call()
    (landed,) = {m.id for m in await b.backend.list(scope)} - before
    await b.aclose()
    reopened = MemoryBridge.open_local(home)
    try:
        rows = await reopened.audit_events(make_identity("dave", roles=("admin",)), action="recovered")
        assert [r.memory_ids for r in rows] == [(landed,)] and rows[0].detail["operation"] == action
    finally:
        await reopened.aclose()


# -- store binding ----------------------------------------------------------------------------


async def _home_with_three_writes(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    for n in range(3):
        await b.remember(ALICE, f"acknowledged write {n}", "note")
    await b.aclose()
    return home


def _truncate_store(home: Path) -> None:
    for name in ("memories.sqlite3", "memories.sqlite3-wal", "memories.sqlite3-shm"):
        path = home / "store" / name
        if path.exists():
            path.unlink() if name != "memories.sqlite3" else path.write_bytes(b"")


def _delete_store(home: Path) -> None:
    shutil.rmtree(home / "store")


def _delete_bridge_state(home: Path) -> None:
    for name in ("bridge.sqlite3", "bridge.sqlite3-wal", "bridge.sqlite3-shm"):
        (home / name).unlink(missing_ok=True)


@pytest.mark.parametrize("damage", [_truncate_store, _delete_store, _delete_bridge_state], ids=["store-truncated", "store-deleted", "bridge-state-deleted"])
async def test_a_replaced_or_emptied_store_is_refused_until_reinitialised(tmp_path, damage):
    home = await _home_with_three_writes(tmp_path)
    damage(home)
    opened: list[MemoryBridge] = []
    try:
        for attempt in ("recall", "remember"):  # refused on first use, and it stays refused: no writes accepted
            with pytest.raises(CorruptStorage) as info:
                b = MemoryBridge.open_local(home)
                opened.append(b)
                if attempt == "recall":
                    await b.recall(ALICE, "acknowledged write")
                else:
                    await b.remember(ALICE, "must not be accepted", "note")
            message = str(info.value)
            assert str(home / "store") in message and "bridge.sqlite3" in message, f"the refusal does not name both files: {message}"
    finally:
        for b in opened:
            await b.aclose()

    b = MemoryBridge.open_local(home, reinitialise=True)
    try:
        written = await b.remember(ALICE, "after an explicit re-initialisation", "note")
        assert written.memory_id in {i.memory_id for i in (await b.recall(ALICE, "explicit re-initialisation")).items}
    finally:
        await b.aclose()
    b = MemoryBridge.open_local(home)  # and the new binding holds on the next ordinary open
    try:
        await b.recall(ALICE, "explicit re-initialisation")
    finally:
        await b.aclose()


async def test_an_intact_home_reopens(tmp_path):
    """The positive control of the binding: close and reopen changes nothing."""
    home = await _home_with_three_writes(tmp_path)
    b = MemoryBridge.open_local(home)
    try:
        assert len((await b.recall(ALICE, "acknowledged write")).items) == 3
    finally:
        await b.aclose()


@pytest.mark.parametrize("swap", ["another-store", "older-backup"])
async def test_a_swapped_or_rolled_back_store_is_refused(tmp_path, swap):
    """A valid store that is not this one (copied from another
    home) or this one from an older backup (fewer committed writes than the audit recorded)."""
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    await b.remember(ALICE, "acknowledged write 0", "note")
    await b.aclose()
    if swap == "older-backup":
        shutil.copytree(home / "store", tmp_path / "backup")
        b = MemoryBridge.open_local(home)
        for n in (1, 2):
            await b.remember(ALICE, f"acknowledged write {n}", "note")
        await b.aclose()
        replacement = tmp_path / "backup"
    else:
        other = await _home_with_three_writes(tmp_path / "elsewhere")
        replacement = other / "store"
    shutil.rmtree(home / "store")
    shutil.copytree(replacement, home / "store")
    try:  # another store is refused as the store opens; an older backup of this one on first use
        b = MemoryBridge.open_local(home)
    except CorruptStorage as exc:
        assert swap == "another-store" and "not the expected store" in str(exc) and "bridge.sqlite3" in str(exc), str(exc)
        return
    try:
        with pytest.raises(CorruptStorage, match="rolled back|not the one"):
            await b.recall(ALICE, "acknowledged write")
        with pytest.raises(CorruptStorage):
            await b.remember(ALICE, "must not be accepted", "note")
    finally:
        await b.aclose()


def _crash_on_audit_of(b: MemoryBridge, crashing_action: str) -> None:
    real_append = b.state.audit.append

    async def append(identity, action, **kwargs):
        if action == crashing_action:
            raise SimulatedCrash()
        return await real_append(identity, action, **kwargs)

    b.state.audit.append = append  # type: ignore[method-assign]


async def test_a_forget_whose_audit_row_was_lost_to_a_crash_is_audited_at_reopen(tmp_path):
    """A hard delete is a change too; no memory disappears unaudited."""
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    doomed = await b.remember(ALICE, "forget me", "note")
    kept = await b.remember(ALICE, "keep me", "note")
    manifest = await b.inject(ALICE, "worker", "notes", memory_refs=[doomed.ref, kept.ref])
    _crash_on_audit_of(b, "forget")
    with pytest.raises(SimulatedCrash):
        await b.forget(ALICE, doomed.ref)
    assert doomed.memory_id not in {m.id for m in await b.backend.list(PRIVATE)}, "premise: the delete landed"
    await b.aclose()

    reopened = MemoryBridge.open_local(home)
    try:
        (row,) = await _recovered(reopened)
        assert row.memory_ids == (doomed.memory_id,) and row.detail["operation"] == "forget" and row.actor == ALICE.principal
        assert await reopened.state.audit.open_intents() == []
        entries = (await reopened.state.manifests.get(manifest.manifest_id)).entries
        assert [mid for _, mid in entries] == [kept.memory_id], "the forgotten id is still in a manifest"
    finally:
        await reopened.aclose()


async def test_a_forget_that_never_reached_the_backend_leaves_no_recovered_row(tmp_path):
    home = tmp_path / "home"
    b = MemoryBridge.open_local(home)
    w = await b.remember(ALICE, "still here", "note")
    await b.state.audit.begin_intent(ALICE, "forget", PRIVATE, w.memory_id)  # announced, then the process died
    await b.aclose()
    reopened = MemoryBridge.open_local(home)
    try:
        await reopened.recall(ALICE, "still here")
        assert await _recovered(reopened) == [] and await reopened.state.audit.open_intents() == []
    finally:
        await reopened.aclose()


async def test_an_erasure_killed_midway_is_audited_as_interrupted_at_reopen(tmp_path):
    """A kill -9 mid-erasure runs no `finally`; the announced intent still says
    an erasure started and did not finish, so the next open records it and a re-run completes it."""
    home = tmp_path / "home"
    admin = make_identity("dave", roles=("admin",))
    b = MemoryBridge.open_local(home)
    for n in range(3):
        await b.remember(make_identity("bob"), f"bob's note {n}", "note")
    _crash_on_audit_of(b, "forget_subject")
    with pytest.raises(SimulatedCrash):
        await b.forget_subject(admin, "bob")
    await b.aclose()
    reopened = MemoryBridge.open_local(home)
    try:
        (row,) = await reopened.audit_events(admin, action="recovered")
        assert row.detail["operation"] == "forget_subject" and row.actor == admin.principal and row.memory_ids == ()
        assert await reopened.forget_subject(admin, "bob") == 0  # idempotent: the re-run finds nothing left
    finally:
        await reopened.aclose()


async def test_a_rejection_whose_audit_row_was_lost_to_a_crash_is_audited_at_reopen(tmp_path):
    """Rejecting a pending memory deletes it: the same announcement as forget covers it."""
    home = tmp_path / "home"
    approver = make_identity("dave", roles=("admin",))
    b = MemoryBridge.open_local(home)
    pending = await b.remember(ALICE, "every service exposes /health", "standard")
    _crash_on_audit_of(b, "reject")
    with pytest.raises(SimulatedCrash):
        await b.reject(approver, pending.ref)
    await b.aclose()
    reopened = MemoryBridge.open_local(home)
    try:
        (row,) = await reopened.audit_events(approver, action="recovered")
        assert row.memory_ids == (pending.memory_id,) and row.detail["operation"] == "reject" and row.actor == approver.principal
    finally:
        await reopened.aclose()
