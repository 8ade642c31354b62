"""get/put/delete of the caller's own item cost no listing of the scope: O(1) in its size.

Counted, not timed: the backend's `list_page` calls are counted while the scope grows (the page
size is shrunk to 4 so a walk would show up as many pages). Reading another writer's item in a
shared scope still needs a walk (keys are per writer); that path is counted too, and
`others_on_miss=False` turns it off.
"""

from __future__ import annotations

from typing import Any

import pytest

from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore
from bridge.doors.langgraph import store as store_module
from tests.langgraph.storekit import Keys


class _Counter:
    def __init__(self, bridge: MemoryBridge, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = bridge.backend.list_page

        async def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await real(*args, **kwargs)

        monkeypatch.setattr(bridge.backend, "list_page", counting)

    def take(self) -> int:
        n, self.calls = self.calls, 0
        return n


@pytest.fixture(autouse=True)
def _small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "_PAGE", 4)


async def _own_item_costs(store: BridgeStore, counter: _Counter, ns: tuple[str, ...]) -> dict[str, int]:
    costs = {}
    counter.take()
    await store.aput(ns, "probe", {"v": 1})
    costs["put new"] = counter.take()
    await store.aput(ns, "probe", {"v": 2})
    costs["put overwrite"] = counter.take()
    item = await store.aget(ns, "probe")
    costs["get"] = counter.take()
    assert item is not None and item.value == {"v": 2}
    await store.adelete(ns, "probe")
    costs["delete"] = counter.take()
    assert await store.aget(("agent",), "probe") is None
    costs["get missing (agent scope)"] = counter.take()
    return costs


@pytest.mark.parametrize("ns", [("memories",), ("workspace",)])
async def test_own_get_put_delete_never_list_the_scope_whatever_its_size(bridge: MemoryBridge, store: BridgeStore, monkeypatch: pytest.MonkeyPatch, ns: tuple[str, ...]) -> None:
    counter = _Counter(bridge, monkeypatch)
    small = await _own_item_costs(store, counter, ns)
    for n in range(40):  # 10 pages of 4
        await store.aput(ns, f"filler-{n}", {"n": n})
    large = await _own_item_costs(store, counter, ns)
    assert small == large == {k: 0 for k in small}, f"list_page calls with 1 item: {small}; with 41 items: {large}"


async def test_reading_another_writers_item_walks_the_shared_scope_unless_turned_off(bridge: MemoryBridge, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> None:
    alice_id = await keys.login("alice", departments=["eng"], workspace="alpha")
    bob = BridgeStore(bridge, await keys.login("bob", departments=["eng"], workspace="alpha"))
    for n in range(12):
        await bob.aput(("workspace",), f"k{n}", {"n": n})
    counter = _Counter(bridge, monkeypatch)
    shared = BridgeStore(bridge, alice_id)
    assert (await shared.aget(("workspace",), "k3")).value == {"n": 3}  # type: ignore[union-attr]
    assert counter.take() == 3, "another writer's item is found by one walk of the scope (12 items, pages of 4 -> 3 calls)"
    strict = BridgeStore(bridge, alice_id, others_on_miss=False)
    assert await strict.aget(("workspace",), "k3") is None
    assert counter.take() == 0
