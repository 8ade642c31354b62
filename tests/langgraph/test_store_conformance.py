"""BaseStore's documented contract (langgraph.store.base docstrings), checked on `BridgeStore`.

LangGraph ships no store conformance tests in its wheel (site-packages holds none), so this set
is written from the contract: get/put/delete round trips, overwrite keeps `created_at`, prefix
search, filters with operators, pagination, semantic search, list_namespaces conditions and
depth, batches answer in order, the sync API, a TTL the bridge cannot store refused (expiry
itself: test_store_ttl.py). Two sentinels check the
fixture hands out an empty store.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.doors.langgraph.items import item_key
from bridge.operations.reads import FindByKey
from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore, UnsupportedStoreOperation



async def test_store_fixture_is_empty(store: BridgeStore) -> None:
    assert await store.asearch(()) == []
    await store.aput(("memories",), "sentinel", {"x": 1})


async def test_store_fixture_is_still_empty(store: BridgeStore) -> None:
    """Sentinel: the previous test wrote an item; a fresh fixture must not show it."""
    assert await store.asearch(()) == []
    assert await store.alist_namespaces() == []


async def test_put_then_get_returns_the_value_key_namespace_and_times(store: BridgeStore) -> None:
    value = {"text": "likes green tea", "tags": ["drink", "tea"], "nested": {"n": 1.5, "ok": True, "none": None}}
    await store.aput(("memories", "alice", "prefs"), "tea", value)
    item = await store.aget(("memories", "alice", "prefs"), "tea")
    assert item is not None and item.value == value and item.key == "tea" and item.namespace == ("memories", "alice", "prefs")
    assert item.created_at <= item.updated_at


async def test_get_of_a_missing_key_or_namespace_is_none(store: BridgeStore) -> None:
    await store.aput(("memories",), "a", {"v": 1})
    assert await store.aget(("memories",), "b") is None
    assert await store.aget(("memories", "alice"), "a") is None  # another namespace of the same scope


async def test_put_overwrites_in_place_keeping_created_at(store: BridgeStore) -> None:
    await store.aput(("memories",), "k", {"v": 1})
    first = await store.aget(("memories",), "k")
    await asyncio.sleep(0.01)
    await store.aput(("memories",), "k", {"v": 2})
    second = await store.aget(("memories",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2} and second.created_at == first.created_at and second.updated_at > first.updated_at
    assert [i.key for i in await store.asearch(("memories",))] == ["k"], "an overwrite must not leave a second item"


async def test_delete_removes_and_deleting_a_missing_item_is_a_no_op(store: BridgeStore) -> None:
    await store.aput(("memories",), "k", {"v": 1})
    await store.adelete(("memories",), "k")
    assert await store.aget(("memories",), "k") is None
    await store.adelete(("memories",), "k")
    await store.aput(("memories",), "k", {"v": 3})  # a deleted key can be used again
    item = await store.aget(("memories",), "k")
    assert item is not None and item.value == {"v": 3}


async def test_search_by_prefix_returns_the_subtree_only(store: BridgeStore) -> None:
    await store.aput(("memories", "alice", "prefs"), "p", {"v": 1})
    await store.aput(("memories", "alice", "facts"), "f", {"v": 2})
    await store.aput(("memories",), "top", {"v": 3})
    assert {i.key for i in await store.asearch(("memories", "alice", "prefs"))} == {"p"}
    assert {i.key for i in await store.asearch(("memories", "alice"))} == {"p", "f"}
    assert {i.key for i in await store.asearch(("memories",))} == {"p", "f", "top"}


async def test_search_filters_exact_values_and_operators(store: BridgeStore) -> None:
    ns = ("memories", "alice", "docs")
    for n, (color, score) in enumerate([("red", 1), ("red", 5), ("blue", 9)]):
        await store.aput(ns, f"d{n}", {"color": color, "score": score, "meta": {"lang": "en" if n else "zh"}})
    keys = lambda items: sorted(i.key for i in items)  # noqa: E731
    assert keys(await store.asearch(ns, filter={"color": "red"})) == ["d0", "d1"]
    assert keys(await store.asearch(ns, filter={"score": {"$gt": 1}})) == ["d1", "d2"]
    assert keys(await store.asearch(ns, filter={"score": {"$gte": 1, "$lt": 9}})) == ["d0", "d1"]
    assert keys(await store.asearch(ns, filter={"color": {"$ne": "red"}})) == ["d2"]
    assert keys(await store.asearch(ns, filter={"meta": {"lang": "zh"}})) == ["d0"]
    assert keys(await store.asearch(ns, filter={"color": "red", "score": {"$lte": 1}})) == ["d0"]
    with pytest.raises(UnsupportedStoreOperation):
        await store.asearch(ns, filter={"score": {"$regex": ".*"}})


async def test_search_pages_with_limit_and_offset(store: BridgeStore) -> None:
    for n in range(5):
        await store.aput(("memories",), f"k{n}", {"n": n})
    everything = [i.key for i in await store.asearch(("memories",), limit=10)]
    assert sorted(everything) == [f"k{n}" for n in range(5)]
    pages = [[i.key for i in await store.asearch(("memories",), limit=2, offset=o)] for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 1] and sum(pages, []) == everything


async def test_search_with_a_query_ranks_the_matching_item_first(store: BridgeStore) -> None:
    ns = ("memories", "alice", "notes")
    await store.aput(ns, "tea", {"text": "alice drinks green tea every morning"})
    await store.aput(ns, "bike", {"text": "alice rides a red bicycle to work"})
    hits = await store.asearch(ns, query="green tea in the morning")
    assert hits and hits[0].key == "tea" and hits[0].score is not None
    assert [h.key for h in await store.asearch(ns, query="bicycle", filter={"text": {"$ne": "x"}}, limit=1)] == ["bike"]


async def test_list_namespaces_with_conditions_depth_and_pages(store: BridgeStore) -> None:
    for ns in [("memories", "alice", "a"), ("memories", "alice", "b", "v1"), ("agent", "assistant", "v1"), ("workspace", "alpha")]:
        await store.aput(ns, "k", {"v": 1})
    assert await store.alist_namespaces() == sorted([("memories", "alice", "a"), ("memories", "alice", "b", "v1"), ("agent", "assistant", "v1"), ("workspace", "alpha")])
    assert await store.alist_namespaces(prefix=("memories",)) == [("memories", "alice", "a"), ("memories", "alice", "b", "v1")]
    assert await store.alist_namespaces(suffix=("v1",)) == [("agent", "assistant", "v1"), ("memories", "alice", "b", "v1")]
    assert await store.alist_namespaces(prefix=("memories", "*", "b")) == [("memories", "alice", "b", "v1")]
    assert await store.alist_namespaces(prefix=("memories",), max_depth=2) == [("memories", "alice")]
    assert await store.alist_namespaces(limit=1, offset=1) == [("memories", "alice", "a")]


async def test_batch_answers_every_op_in_order(store: BridgeStore) -> None:
    results = await store.abatch([
        PutOp(("memories",), "a", {"v": 1}),
        GetOp(("memories",), "a"),
        SearchOp(("memories",)),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("memories",)),)),
        PutOp(("memories",), "a", None),
        GetOp(("memories",), "a"),
    ])
    assert results[0] is None and results[1].value == {"v": 1}
    assert [i.key for i in results[2]] == ["a"] and results[3] == [("memories",)]
    assert results[4] is None and results[5] is None


async def test_a_ttl_the_bridge_cannot_store_is_refused_not_ignored(store: BridgeStore) -> None:
    """TTL is supported now (tests/langgraph/test_store_ttl.py); a ttl the bridge cannot honour
    (zero, negative, beyond the maximum, not a number) is refused and nothing is stored."""
    assert store.supports_ttl is True
    for ttl in (0, -5, 100 * 365 * 24 * 60):
        with pytest.raises(InvalidInput):
            await store.aput(("memories",), "k", {"v": 1}, ttl=ttl)
    with pytest.raises(InvalidInput):
        await store.abatch([PutOp(("memories",), "k", {"v": 1}, ttl="5")])  # type: ignore[arg-type]
    assert await store.aget(("memories",), "k") is None
    await store.aput(("memories",), "k", {"v": 1}, ttl=5)  # a valid one is stored as the memory's expiry (here and over HTTP)
    who = await store.identity_source.identity()
    record = await store.bridge.execute(who, FindByKey(scope=ScopeKey.private(who.tenant_id, who.user_id), key=item_key(("memories",), "k")))
    assert record.expires_at is not None and 290 < record.expires_at - time.time() <= 300, record
    assert (await store.aget(("memories",), "k")).value == {"v": 1}


async def test_a_value_that_is_not_json_is_refused(store: BridgeStore) -> None:
    with pytest.raises(InvalidInput, match="JSON"):
        await store.aput(("memories",), "k", {"when": object()})


def test_sync_api_works_outside_an_event_loop(tmp_path, keys) -> None:  # type: ignore[no-untyped-def]
    bridge = MemoryBridge.open_local(tmp_path / "sync")
    store = BridgeStore(bridge, asyncio.run(keys.login("alice")))
    try:
        store.put(("memories",), "k", {"v": 1})
        item = store.get(("memories",), "k")
        assert item is not None and item.value == {"v": 1}
        assert [i.key for i in store.search(("memories",))] == ["k"]
        store.delete(("memories",), "k")
        assert store.get(("memories",), "k") is None
    finally:
        store.close()
