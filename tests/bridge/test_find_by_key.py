"""`FindByKey`: the caller's own memory by its idempotency key, O(1), read-checked like GetMemory.

Keys are per writer (bridge.writes.backend_key): in a shared scope one writer's key never finds
another writer's memory, so nobody can find — or shadow — someone else's item by its key.
"""

from __future__ import annotations

import pytest

from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from bridge.errors import InvalidInput, NotFound, NotPermitted
from bridge.operations.reads import FindByKey
from tests.kit import make_identity

ALICE = make_identity("alice")
BOB = make_identity("bob")
ADMIN = make_identity("dave", roles=("admin",))
ALPHA = ScopeKey.workspace("acme", "alpha")


async def test_find_by_key_returns_what_a_write_with_that_key_stored(bridge: MemoryBridge) -> None:
    written = await bridge.remember(ALICE, "alpha ships on Fridays", "decision", visibility="workspace", idempotency_key="ship-day")
    found = await bridge.execute(ALICE, FindByKey(scope=ALPHA, key="ship-day"))
    assert found.memory_id == written.memory_id and found.content == "alpha ships on Fridays" and found.scope == str(ALPHA)
    assert found.author == "alice@assistant" and found.why_visible


async def test_alice_cannot_find_bobs_key_in_a_shared_workspace(bridge: MemoryBridge) -> None:
    await bridge.remember(BOB, "bob's take: ship on Mondays", "decision", visibility="workspace", idempotency_key="ship-day")
    assert (await bridge.execute(BOB, FindByKey(scope=ALPHA, key="ship-day"))).content == "bob's take: ship on Mondays"  # positive control
    with pytest.raises(NotFound):
        await bridge.execute(ALICE, FindByKey(scope=ALPHA, key="ship-day"))
    # alice's own write with the same key is a memory of its own, and bob's lookup still finds his
    mine = await bridge.remember(ALICE, "alice: Fridays", "decision", visibility="workspace", idempotency_key="ship-day")
    assert (await bridge.execute(ALICE, FindByKey(scope=ALPHA, key="ship-day"))).memory_id == mine.memory_id
    assert (await bridge.execute(BOB, FindByKey(scope=ALPHA, key="ship-day"))).content == "bob's take: ship on Mondays"


async def test_another_agent_of_the_same_user_does_not_find_the_key(bridge: MemoryBridge) -> None:
    await bridge.remember(ALICE, "private note", "note", idempotency_key="k1")
    coder = make_identity("alice", agent="coder")
    with pytest.raises(NotFound):
        await bridge.execute(coder, FindByKey(scope=ScopeKey.private("acme", "alice"), key="k1"))


async def test_find_by_key_in_an_unreadable_scope_is_refused_and_audited(bridge: MemoryBridge) -> None:
    await bridge.remember(BOB, "bob's private note", "note", idempotency_key="secret")
    for scope in (ScopeKey.private("acme", "bob"), ScopeKey.private("globex", "alice"), ScopeKey.workspace("acme", "beta")):
        with pytest.raises(NotPermitted):
            await bridge.execute(ALICE, FindByKey(scope=scope, key="secret"))
    rows = await bridge.state.audit.query(bridge.policy.audit_view(ADMIN), action="denied")
    refused = [r for r in rows if r.detail.get("operation") == FindByKey.operation_name() and r.actor == ALICE.principal]
    assert len(refused) == 3, [r.detail for r in rows]


async def test_find_by_key_of_a_missing_key_is_not_found(bridge: MemoryBridge) -> None:
    with pytest.raises(NotFound):
        await bridge.execute(ALICE, FindByKey(scope=ScopeKey.private("acme", "alice"), key="never-written"))


@pytest.mark.parametrize("scope,key", [("acme/user/alice", ""), ("acme/user/alice", 7), ("not a scope", "k"), (None, "k"), ("acme/user/alice", "a\u200bb")])
def test_find_by_key_validates_its_fields(scope: object, key: object) -> None:
    with pytest.raises(InvalidInput):
        FindByKey(scope=scope, key=key)  # type: ignore[arg-type]


async def test_find_by_key_never_lists_the_scope(bridge: MemoryBridge, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(30):
        await bridge.remember(ALICE, f"note {n}", "note", idempotency_key=f"k{n}")
    calls: list[object] = []
    real = bridge.backend.list_page

    async def counting(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(bridge.backend, "list_page", counting)
    assert (await bridge.execute(ALICE, FindByKey(scope=ScopeKey.private("acme", "alice"), key="k17"))).content == "note 17"
    assert calls == []


async def test_find_by_key_never_returns_an_expired_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Expired = gone for every reader, its writer included (as for get and list)."""
    from contract_tests.harness import Clock

    clock = Clock()
    bridge = MemoryBridge.open_local(tmp_path / "home", clock=clock)
    try:
        await bridge.remember(ALICE, "alpha freezes deploys this week", "decision", visibility="workspace", idempotency_key="freeze", ttl_s=60)
        assert (await bridge.execute(ALICE, FindByKey(scope=ALPHA, key="freeze"))).content == "alpha freezes deploys this week"
        clock.now += 61
        with pytest.raises(NotFound):
            await bridge.execute(ALICE, FindByKey(scope=ALPHA, key="freeze"))
    finally:
        await bridge.aclose()
