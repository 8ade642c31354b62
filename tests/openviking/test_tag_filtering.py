"""Status and kind are search tags: the server filters before ranking (0.5.2 `find` tags)."""

from __future__ import annotations

from adapters.base import MemoryPatch, SearchQuery, Status
from adapters.scopes import ScopeKey, ScopeSet
from tests.openviking.ovhelpers import mem

SCOPE = ScopeKey.private("acme", "alice")


async def test_filters_return_limit_permitted_hits_behind_many_closer_ones(backend):
    query = "release checklist for the payments service"
    for n in range(24):  # closer, but pending or of another kind
        await backend.put(SCOPE, mem(f"{query} draft {n}", kind="note", status=Status.PENDING if n % 2 else Status.ACTIVE), idempotency_key=f"c{n}")
    facts = [await backend.put(SCOPE, mem(f"gardening fact {n}: water at dawn", kind="Fact"), idempotency_key=f"f{n}") for n in range(3)]
    calls = []
    original = backend.client.find

    async def spy(*a, **kw):
        calls.append(kw.get("tags"))
        return await original(*a, **kw)

    backend.client.find = spy  # type: ignore[method-assign]
    result = await backend.search(SearchQuery(ScopeSet.of(SCOPE), query, limit=3, kinds=frozenset({"Fact"})))
    assert {h.memory.id for h in result.hits} == {m.id for m in facts}
    assert calls and all(t and "vbs=active" in t and any(x.startswith("vbk=") for x in t) for t in calls), calls
    assert len(calls) == 1, "with tags the first find must already hold the permitted hits"
    # "fact" (lower case) is another kind: the tag is a hash of the exact string
    assert not (await backend.search(SearchQuery(ScopeSet.of(SCOPE), query, limit=3, kinds=frozenset({"fact"})))).hits
    # two statuses: one find per status, merged
    calls.clear()
    both = await backend.search(SearchQuery(ScopeSet.of(SCOPE), query, limit=30, statuses=frozenset({Status.ACTIVE, Status.PENDING})))
    assert len(both.hits) == 27 and len(calls) == 2
    # an update moves the tag with the status
    await backend.update(SCOPE, facts[0].id, MemoryPatch(status=Status.SUPERSEDED))
    active = await backend.search(SearchQuery(ScopeSet.of(SCOPE), "gardening fact water", limit=3, kinds=frozenset({"Fact"})))
    assert {h.memory.id for h in active.hits} == {facts[1].id, facts[2].id}
    sup = await backend.search(SearchQuery(ScopeSet.of(SCOPE), "gardening fact", limit=3, statuses=frozenset({Status.SUPERSEDED})))
    assert [h.memory.id for h in sup.hits] == [facts[0].id]
    # too many (status, kind) pairs: one untagged find, filtered here
    calls.clear()
    many = await backend.search(SearchQuery(ScopeSet.of(SCOPE), query, limit=5, statuses=frozenset(Status),
                                            kinds=frozenset({"note", "Fact", "a", "b", "c"})))
    assert len(many.hits) == 5 and calls == [None]
