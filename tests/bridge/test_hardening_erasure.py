"""Issue 9 finding 3: erasure works at any scope size, is resumable and idempotent, and audits
what it did even when it stops early.

Before the fix a walk limit made every `forget_subject` of the tenant raise once one member had
filled a workspace — after the subject's private memories were already hard-deleted, and with
no audit row of what was gone.
"""

from __future__ import annotations

import pytest

import bridge.handlers.erasure as erasure
from adapters.errors import Unavailable
from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from tests.kit import make_identity

ADMIN = make_identity("dave", roles=("admin",), workspace=None)
BOB, BOB_CODER, CAROL = make_identity("bob"), make_identity("bob", agent="coder"), make_identity("carol")


async def _populate(b: MemoryBridge, n: int) -> set[str]:
    """n memories of bob's in each of: his private scope, his agent scope, the shared workspace;
    plus n of carol's in the workspace (which must survive). Returns bob's memory ids."""
    bobs = set()
    for i in range(n):
        bobs.add((await b.remember(BOB, f"bob prefers dark theme variant {i}", "preference")).memory_id)
        bobs.add((await b.remember(BOB_CODER, f"bob's coder learned lint rule {i}", "experience")).memory_id)
        bobs.add((await b.remember(BOB, f"alpha fact by bob number {i}", "fact")).memory_id)
        await b.remember(CAROL, f"alpha fact by carol number {i}", "fact")
    return bobs


async def _bobs_left(b: MemoryBridge) -> set[str]:
    left = set()
    for key in await b.backend.list_scopes("acme"):
        left |= {m.id for m in await b.backend.list(key) if "bob" in (m.provenance.author_user_id, m.subject_user_id)}
    return left


async def _erasure_rows(b: MemoryBridge) -> list:
    return list(reversed(await b.audit_events(ADMIN, action="forget_subject")))


async def test_erasure_finishes_at_any_scope_size(bridge, monkeypatch):
    """Many pages per scope (PAGE_SIZE 4, 25 memories per scope): erasure walks them all."""
    monkeypatch.setattr(erasure, "PAGE_SIZE", 4)
    bobs = await _populate(bridge, 25)
    assert await bridge.forget_subject(ADMIN, "bob") == len(bobs) == 75
    assert await _bobs_left(bridge) == set()
    carol_left = await bridge.backend.list(ScopeKey.workspace("acme", "alpha"))
    assert len(carol_left) == 25 and {m.provenance.author_user_id for m in carol_left} == {"carol"}
    (row,) = await _erasure_rows(bridge)
    assert row.detail["complete"] is True and row.detail["count"] == 75 and set(row.memory_ids) == bobs


async def test_erasure_interrupted_by_a_backend_failure_is_audited_and_a_rerun_finishes(bridge, monkeypatch):
    """A backend failing mid-erasure leaves exactly one `forget_subject` row with complete=False
    and the ids removed so far; a re-run removes the rest (idempotent: a third run removes 0)."""
    monkeypatch.setattr(erasure, "PAGE_SIZE", 3)
    bobs = await _populate(bridge, 8)
    real_delete = bridge.backend.delete
    calls = {"n": 0}

    async def flaky_delete(scope, memory_id):
        calls["n"] += 1
        if calls["n"] == 11:
            raise Unavailable("injected outage mid-erasure", backend="local", scope=scope)
        return await real_delete(scope, memory_id)

    monkeypatch.setattr(bridge.backend, "delete", flaky_delete)
    with pytest.raises(Unavailable):
        await bridge.forget_subject(ADMIN, "bob")
    (stopped,) = await _erasure_rows(bridge)
    assert stopped.detail["complete"] is False and stopped.detail["stopped_by"] == "Unavailable"
    assert stopped.detail["count"] == len(stopped.memory_ids) == 10
    gone = set(stopped.memory_ids)
    assert gone <= bobs and not gone & await _bobs_left(bridge), "the audit row names memories that were not removed"
    assert len(await _bobs_left(bridge)) == len(bobs) - 10

    assert await bridge.forget_subject(ADMIN, "bob") == len(bobs) - 10
    assert await _bobs_left(bridge) == set()
    assert await bridge.forget_subject(ADMIN, "bob") == 0
    rows = await _erasure_rows(bridge)
    assert [r.detail["complete"] for r in rows] == [False, True, True]
    assert set(rows[0].memory_ids) | set(rows[1].memory_ids) == bobs and not set(rows[0].memory_ids) & set(rows[1].memory_ids)


async def test_erasure_stopped_by_cancellation_is_still_audited(bridge, monkeypatch):
    """A cancelled erasure (a client hanging up) still records what was already removed."""
    import asyncio

    bobs = await _populate(bridge, 3)
    real_delete = bridge.backend.delete
    calls = {"n": 0}

    async def cancelled_delete(scope, memory_id):
        calls["n"] += 1
        if calls["n"] == 4:
            raise asyncio.CancelledError()
        return await real_delete(scope, memory_id)

    monkeypatch.setattr(bridge.backend, "delete", cancelled_delete)
    with pytest.raises(asyncio.CancelledError):
        await bridge.forget_subject(ADMIN, "bob")
    (row,) = await _erasure_rows(bridge)
    assert row.detail["complete"] is False and len(row.memory_ids) == 3 and set(row.memory_ids) <= bobs


async def test_one_member_filling_a_workspace_cannot_block_anyones_erasure(bridge, monkeypatch):
    """The attack of the finding, scaled down: carol writes far more than one page into the shared
    workspace; erasing bob (who wrote one memory there) still completes."""
    monkeypatch.setattr(erasure, "PAGE_SIZE", 2)
    for i in range(40):
        await bridge.remember(CAROL, f"carol floods alpha {i}", "decision")
    mine = await bridge.remember(BOB, "alpha fact by bob", "fact")
    assert await bridge.forget_subject(ADMIN, "bob") == 1
    assert mine.memory_id not in {m.id for m in await bridge.backend.list(ScopeKey.workspace("acme", "alpha"))}
