"""Store behaviours LangGraph's own store tests rely on, each once broken here."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path


from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore
from tests.langgraph.storekit import Keys
from tests.langgraph.upstream.kit import _sync


def test_a_sync_only_store_serves_two_threads_at_once(tmp_path: Path) -> None:
    """Two threads blocking on one store: the first's private loop was recorded as "the store's
    loop" and the second handed its work to it, to wait forever once the first call returned."""
    bridge = MemoryBridge.open_local(tmp_path / "b")
    keys = Keys(tmp_path / "k")
    store = BridgeStore(bridge, _sync(keys.login("alice")))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(5):
                store.put(("memories",), f"k{n}-{i}", {"text": f"thread {n} item {i}"})
                assert store.get(("memories",), f"k{n}-{i}") is not None
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)  # a hang guard, not a timing goal: a blocked thread never ends
    assert not any(t.is_alive() for t in threads), "a sync store call never returned"
    assert not errors, errors
    assert len(store.search(("memories",), limit=100)) == 10
    store.close()
    _sync(bridge.aclose())
    keys.close()


async def test_put_index_false_is_never_ranked_and_index_fields_choose_the_text(store: BridgeStore) -> None:
    await store.aput(("memories",), "hidden", {"text": "penguins in antarctica"}, index=False)
    await store.aput(("memories",), "shown", {"text": "penguins in antarctica"})
    await store.aput(("memories",), "fields", {"title": "zebras", "body": "penguins in antarctica"}, index=["title"])
    found = await store.asearch(("memories",), query="penguins antarctica")
    assert [i.key for i in found][0] == "shown"
    by_key = {i.key: i.score for i in found}
    assert by_key["hidden"] is None and [i.key for i in found][-1] == "hidden"  # listed after the ranked ones, never ranked
    assert by_key["fields"] is not None and by_key["fields"] < by_key["shown"]  # only its title ("zebras") is embedded
    assert (await store.aget(("memories",), "fields")).value == {"title": "zebras", "body": "penguins in antarctica"}  # type: ignore[union-attr]
    assert [i.key for i in await store.asearch(("memories",), query="zebras")][0] == "fields"


async def test_a_query_search_returns_every_item_and_the_wrapper_is_not_embedded(store: BridgeStore) -> None:
    """No relevance floor (a query with no overlap still lists every item) and the item's wrapper
    (namespace, key, times) is not embedded: "created_at" matches no item that does not say it."""
    for n, text in enumerate(["apples and pears", "a river in spring", "the created_at column of a table"]):
        await store.aput(("memories",), f"k{n}", {"text": text})
    found = await store.asearch(("memories",), query="created_at", limit=10)
    assert len(found) == 3
    assert found[0].key == "k2" and found[0].score and found[0].score > max(i.score or 0.0 for i in found[1:])
    assert len(await store.asearch(("memories",), query="zzqx unrelated", limit=10)) == 3


async def test_a_planted_item_with_a_wild_time_neither_breaks_readers_nor_wins_the_key(bridge: MemoryBridge, keys: Keys) -> None:
    alice = BridgeStore(bridge, await keys.login("alice", workspace="alpha"))
    carol = BridgeStore(bridge, await keys.login("carol", workspace="alpha"))
    bob = await keys.login("bob", workspace="alpha")
    ns = ("workspace", "alpha")
    for claimed in (1e300, time.time() + 10 * 365 * 86400.0):
        planted = {"langgraph": {"namespace": list(ns), "key": "plan", "created_at": claimed, "updated_at": claimed}, "value": {"text": "planted by bob"}}
        await bridge.remember(bob, json.dumps(planted), "fact", visibility="workspace")
    await carol.aput(ns, "plan", {"text": "carol's real plan"})
    got = await alice.aget(ns, "plan")  # no ValueError from a time no datetime can hold
    assert got is not None and got.value == {"text": "carol's real plan"}, "a claimed future time won the key"
    for items in (await alice.asearch(ns), await alice.asearch(ns, query="plan")):
        assert {i.value["text"] for i in items} == {"planted by bob", "carol's real plan"}
        assert all(i.updated_at.timestamp() < time.time() + 60 for i in items)
