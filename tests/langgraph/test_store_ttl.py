"""LangGraph TTL on `BridgeStore`: a put's `ttl` (minutes) is the memory's expiry on the bridge's clock.

Written from BaseStore's documented TTL contract (`supports_ttl`, `PutOp.ttl` in minutes,
`TTLConfig.default_ttl`): an item put with a TTL is there until it expires and then gone from
get, search (with and without a query) and list_namespaces; a put without ttl never expires, and
re-putting an item changes its expiry (the store re-writes it, since EditMemory carries none).
Refresh on read is not offered (store.py says why): a `ttl_config` asking for it is refused, and a
read with `refresh_ttl=True` leaves the expiry where the put set it. The clock is the bridge's own
(`MemoryBridge.open_local(clock=...)`, as tests/bridge/test_lifecycle.py fakes it), so nothing sleeps.
The other half of the lifecycle, quotas: a put over a quota is the bridge's typed refusal.
"""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio

from bridge.errors import QuotaExceeded
from bridge.facade import MemoryBridge
from bridge.policy.quotas import QuotaConfig, QuotaLimits
from bridge.doors.langgraph import BridgeStore, UnsupportedStoreOperation
from bridge.doors.langgraph.items import item_key
from bridge.operations.reads import FindByKey
from adapters.scopes import ScopeKey
from tests.langgraph.storekit import Keys
from contract_tests.harness import Clock


@pytest_asyncio.fixture
async def clocked(tmp_path: Path, keys: Keys) -> AsyncIterator[tuple[BridgeStore, Clock, MemoryBridge]]:
    clock = Clock()
    bridge = MemoryBridge.open_local(tmp_path / "clocked", clock=clock)
    alice = await keys.login("alice", workspace="alpha")
    yield BridgeStore(bridge, alice), clock, bridge
    await bridge.aclose()


async def _expiry(store: BridgeStore, bridge: MemoryBridge, key: str) -> float | None:
    identity = await store.identity_source.identity()
    record = await bridge.execute(identity, FindByKey(scope=ScopeKey.private("acme", "alice"), key=item_key(("memories",), key)))
    return record.expires_at


async def test_item_put_with_a_ttl_is_gone_from_get_and_search_after_it_expires(clocked) -> None:  # type: ignore[no-untyped-def]
    store, clock, bridge = clocked
    await store.aput(("memories",), "doomed", {"text": "the staging deploy token rotates on friday"}, ttl=2)
    await store.aput(("memories",), "kept", {"text": "the staging deploy runs from the release branch"})
    assert await _expiry(store, bridge, "doomed") == pytest.approx(clock.now + 120)
    assert (await store.aget(("memories",), "doomed")).value["text"].startswith("the staging deploy token")
    assert {i.key for i in await store.asearch(("memories",), query="staging deploy token")} == {"doomed", "kept"}

    clock.advance(119)
    assert await store.aget(("memories",), "doomed") is not None  # not yet

    clock.advance(2)
    assert await store.aget(("memories",), "doomed") is None
    assert [i.key for i in await store.asearch(("memories",))] == ["kept"]
    assert [i.key for i in await store.asearch(("memories",), query="staging deploy token")] == ["kept"]
    assert [i.key for i in await store.asearch((), query="staging deploy token")] == ["kept"]
    assert (await store.aget(("memories",), "kept")) is not None  # the sentinel without a ttl never expires


async def test_an_expired_key_can_be_put_again_and_lives(clocked) -> None:  # type: ignore[no-untyped-def]
    store, clock, _ = clocked
    await store.aput(("memories",), "k", {"v": 1}, ttl=1)
    clock.advance(61)
    assert await store.aget(("memories",), "k") is None
    await store.aput(("memories",), "k", {"v": 2})
    item = await store.aget(("memories",), "k")
    assert item is not None and item.value == {"v": 2}, item


async def test_re_putting_an_item_changes_its_expiry(clocked) -> None:  # type: ignore[no-untyped-def]
    """EditMemory has no expiry, so the store re-writes: a new ttl replaces the old one, and a put
    without ttl makes the item permanent again (LangGraph: ttl=None never expires)."""
    store, clock, bridge = clocked
    await store.aput(("memories",), "k", {"v": 1}, ttl=1)
    first = await store.aget(("memories",), "k")
    await store.aput(("memories",), "k", {"v": 2}, ttl=10)
    assert await _expiry(store, bridge, "k") == pytest.approx(clock.now + 600)
    clock.advance(61)
    again = await store.aget(("memories",), "k")
    assert again is not None and again.value == {"v": 2} and again.created_at == first.created_at, again
    await store.aput(("memories",), "k", {"v": 3})
    assert await _expiry(store, bridge, "k") is None
    clock.advance(3600)
    assert (await store.aget(("memories",), "k")).value == {"v": 3}


async def test_default_ttl_of_the_ttl_config_applies_to_puts_without_one(tmp_path: Path, keys: Keys) -> None:
    clock = Clock()
    bridge = MemoryBridge.open_local(tmp_path / "default-ttl", clock=clock)
    try:
        store = BridgeStore(bridge, await keys.login("alice"), ttl_config={"default_ttl": 5})
        await store.aput(("memories",), "k", {"v": 1})
        assert await _expiry(store, bridge, "k") == pytest.approx(clock.now + 300)
        clock.advance(301)
        assert await store.aget(("memories",), "k") is None
    finally:
        await bridge.aclose()


async def test_refresh_on_read_is_refused_and_a_refreshing_read_leaves_the_expiry(clocked, bridge: MemoryBridge, keys: Keys) -> None:  # type: ignore[no-untyped-def]
    store, clock, clocked_bridge = clocked
    with pytest.raises(UnsupportedStoreOperation, match="refresh_on_read"):
        BridgeStore(bridge, await keys.login("bob"), ttl_config={"refresh_on_read": True, "default_ttl": 5})
    await store.aput(("memories",), "k", {"v": 1}, ttl=1)
    clock.advance(50)
    assert await store.aget(("memories",), "k", refresh_ttl=True) is not None
    await store.asearch(("memories",), refresh_ttl=True)
    assert await _expiry(store, clocked_bridge, "k") == pytest.approx(clock.now - 50 + 60)  # not moved by the reads
    clock.advance(11)
    assert await store.aget(("memories",), "k") is None


async def test_list_namespaces_forgets_a_namespace_whose_items_all_expired(clocked) -> None:  # type: ignore[no-untyped-def]
    store, clock, _ = clocked
    await store.aput(("memories", "alice", "scratch"), "k", {"v": 1}, ttl=1)
    await store.aput(("memories", "alice", "notes"), "k", {"v": 1})
    assert await store.alist_namespaces() == [("memories", "alice", "notes"), ("memories", "alice", "scratch")]
    clock.advance(61)
    assert await store.alist_namespaces() == [("memories", "alice", "notes")]


async def test_a_put_over_the_quota_is_quota_exceeded_not_a_collision(tmp_path: Path, keys: Keys) -> None:
    """QuotaExceeded is a Conflict; the store's retry on a concurrent put's collision must not
    swallow it into a misleading "kept colliding" Conflict."""
    bridge = MemoryBridge.open_local(tmp_path / "quota", quotas=QuotaConfig(user=QuotaLimits(max_memories=1)))
    try:
        store = BridgeStore(bridge, await keys.login("dave"))
        await store.aput(("memories",), "a", {"v": 1})
        with pytest.raises(QuotaExceeded) as refused:
            await store.aput(("memories",), "b", {"v": 2})
        assert (refused.value.level, refused.value.measure, refused.value.limit) == ("user", "memories", 1)
        assert await store.aget(("memories",), "b") is None
        await store.aput(("memories",), "a", {"v": 3})  # an edit in place needs no new space
        assert (await store.aget(("memories",), "a")).value == {"v": 3}
    finally:
        await bridge.aclose()
