"""A query search of one namespace asks the backend for that namespace's scope alone (exact),
and a namespace of a scope the caller cannot read is refused, not searched in a wider set."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.errors import NotPermitted
from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore


async def test_a_one_namespace_search_asks_the_backend_for_that_scope_only(bridge: MemoryBridge, store: BridgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(60):  # more workspace candidates than the recall's pool (50) holds
        await store.aput(("workspace",), f"w{n}", {"text": f"green tea note {n}"})
    await store.aput(("memories",), "mine", {"text": "green tea, no sugar"})
    asked: list[tuple[str, ...]] = []
    real = bridge.backend.search

    async def watching(query: Any) -> Any:
        asked.append(tuple(str(k) for k in query.scopes.keys))
        return await real(query)

    monkeypatch.setattr(bridge.backend, "search", watching)
    items = await store.asearch(("memories",), query="green tea note")
    assert [i.key for i in items] == ["mine"]
    assert asked == [("acme/user/alice",)], f"the backend was asked for {asked}"
    assert len(await store.asearch(("workspace",), query="green tea note", limit=50)) == 50


async def test_a_namespace_of_an_unreadable_workspace_is_refused_for_query_search(store: BridgeStore) -> None:
    with pytest.raises(NotPermitted):
        await store.asearch(("workspace", "beta"), query="anything")
