"""Erasure works at any scope size, is resumable and idempotent, and audits
what it did even when it stops early.

Before the fix a walk limit made every `forget_subject` of the tenant raise once one member had
filled a workspace — after the subject's private memories were already hard-deleted, and with
no audit row of what was gone.
"""

from __future__ import annotations

import time

import pytest

import bridge.handlers.erasure as erasure
from adapters.base import Capabilities, ListPage, Provenance, Status, StoredMemory
from adapters.errors import BackendUnavailable
from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from bridge.state.memory import MemoryState
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
            raise BackendUnavailable("injected outage mid-erasure", backend="local", scope=scope)
        return await real_delete(scope, memory_id)

    monkeypatch.setattr(bridge.backend, "delete", flaky_delete)
    with pytest.raises(BackendUnavailable):
        await bridge.forget_subject(ADMIN, "bob")
    (stopped,) = await _erasure_rows(bridge)
    assert stopped.detail["complete"] is False and stopped.detail["stopped_by"] == "BackendUnavailable"
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


class WideStore:
    """A minimal in-memory backend holding one very large workspace: erasure needs only
    list_scopes, list_page and delete (and `list`, which the pre-fix erasure used)."""

    name = "wide"
    capabilities = Capabilities()

    def __init__(self) -> None:
        self.scopes: dict[ScopeKey, dict[str, StoredMemory]] = {}

    def add(self, scope: ScopeKey, memory_id: str, author: str) -> None:
        now = time.time()
        self.scopes.setdefault(scope, {})[memory_id] = StoredMemory(
            memory_id, scope, f"memory {memory_id}", "fact", Status.ACTIVE, 1.0, Provenance(author, "assistant"), author, {}, now, now,
        )

    async def list_scopes(self, tenant_id: str) -> list[ScopeKey]:
        return [k for k in self.scopes if k.tenant_id == tenant_id]

    async def list(self, scope: ScopeKey, *, limit: int | None = None, **_: object) -> list[StoredMemory]:
        return list(self.scopes.get(scope, {}).values())[:limit]

    async def list_page(self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 100, statuses: object = None) -> ListPage:
        rows = sorted(self.scopes.get(scope, {}).values(), key=lambda m: m.id)
        start = int(cursor or 0)
        page = tuple(rows[start:start + limit])
        return ListPage(page, str(start + limit) if start + limit < len(rows) else None)

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        return self.scopes.get(scope, {}).pop(memory_id, None) is not None

    async def aclose(self) -> None:
        pass


async def test_erasure_of_a_workspace_larger_than_the_old_walk_limit_completes():
    """No walk limit: 10,001 memories of carol's in one workspace (the pre-fix code refused any
    erasure once a shared scope held 10,000) — bob's three memories are erased at the default
    page size, and all of carol's stay."""
    store = WideStore()
    workspace, private = ScopeKey.workspace("acme", "alpha"), ScopeKey.private("acme", "bob")
    for n in range(10_001):
        store.add(workspace, f"c{n:05d}", "carol")
    store.add(workspace, "b-shared", "bob")
    store.add(private, "b-private-1", "bob")
    store.add(private, "b-private-2", "bob")
    b = MemoryBridge(store, MemoryState())  # type: ignore[arg-type]
    assert await b.forget_subject(ADMIN, "bob") == 3
    assert "b-shared" not in store.scopes[workspace] and not store.scopes[private]
    assert len(store.scopes[workspace]) == 10_001
    (row,) = await b.audit_events(ADMIN, action="forget_subject")
    assert row.detail["complete"] is True and sorted(row.memory_ids) == ["b-private-1", "b-private-2", "b-shared"]
