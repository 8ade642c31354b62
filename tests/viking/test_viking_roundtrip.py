"""The protocol end to end on the simulator: put/get/update/search/list/delete/list_scopes."""

from __future__ import annotations

import pytest

from adapters.base import MemoryBackend, MemoryPatch, SearchQuery, Status
from adapters.errors import EmptyScopeError, InvalidRequest, BackendNotFound, UnsupportedFilter
from adapters.scopes import ScopeKey, ScopeSet
from adapters.sync import SyncBackend
from adapters.viking import VikingBackend
from contract_tests.backends.viking import make_simulated
from contract_tests.registry import get_adapter
from contract_tests.viking_simulator import VikingSimulator
from tests.viking.vikingkit import mem, prov

ALICE = ScopeKey.private("acme", "alice")
AGENT = ScopeKey.agent("acme", "coder", "alice")
WS = ScopeKey.workspace("acme", "alpha")


def test_sync_round_trip_through_the_protocol() -> None:
    _, backend = make_simulated()
    assert isinstance(backend, MemoryBackend)
    with SyncBackend(backend) as b:
        p = prov("alice", "coder")
        stored = b.put(ALICE, mem("alice likes green tea", kind="preference", provenance=p, confidence=0.8, subject_user_id="alice", metadata={"src": "chat", "n": 3}), idempotency_key="k1")
        got = b.get(ALICE, stored.id)
        assert got == stored
        assert (got.kind, got.confidence, got.subject_user_id, dict(got.metadata), got.provenance) == ("preference", 0.8, "alice", {"src": "chat", "n": 3}, p)
        b.put(AGENT, mem("coder learned: run tests first"), idempotency_key="k1")
        b.put(WS, mem("alpha ships on friday"), idempotency_key="k1")
        hits = b.search(SearchQuery(ScopeSet.of(ALICE, AGENT, WS), "green tea", limit=2)).hits
        assert hits[0].memory.id == stored.id and hits[0].scope == ALICE and len(hits) == 2
        updated = b.update(ALICE, stored.id, MemoryPatch(content="alice likes oolong", status=Status.SUPERSEDED))
        assert b.get(ALICE, stored.id) == updated and updated.content == "alice likes oolong"
        assert b.search(SearchQuery(ScopeSet.of(ALICE), "oolong")).hits == ()  # superseded is not recalled by default
        assert [m.id for m in b.list(ALICE, statuses=frozenset({Status.SUPERSEDED}))] == [stored.id]
        assert b.list(ALICE, statuses=frozenset({Status.ACTIVE})) == []
        assert set(b.list_scopes("acme")) == {ALICE, AGENT, WS}
        assert b.list_scopes("globex") == []
        assert b.delete(ALICE, stored.id) is True
        assert b.delete(ALICE, stored.id) is False
        with pytest.raises(BackendNotFound):
            b.get(ALICE, stored.id)
        assert set(b.list_scopes("acme")) == {AGENT, WS}


async def test_status_and_kind_filters_still_fill_the_limit(sim: VikingSimulator, backend: VikingBackend) -> None:
    for i in range(60):
        await backend.put(ALICE, mem(f"tea pending draft {i}", status=Status.PENDING), idempotency_key=f"p{i}")
    for i in range(40):
        await backend.put(ALICE, mem(f"tea event {i}", kind="event"), idempotency_key=f"e{i}")
    for i in range(5):
        await backend.put(ALICE, mem(f"plain note {i}", kind="decision"), idempotency_key=f"a{i}")
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea", limit=5, kinds=frozenset({"decision"})))
    assert len(result.hits) == 5 and {h.memory.kind for h in result.hits} == {"decision"}
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea pending draft", limit=5))
    assert len(result.hits) == 5 and all(h.memory.status is Status.ACTIVE for h in result.hits)
    assert len(await backend.list(ALICE, statuses=frozenset({Status.ACTIVE}), limit=45)) == 45


async def test_idempotency_key_returns_the_first_record(backend: VikingBackend) -> None:
    first = await backend.put(WS, mem("first"), idempotency_key="same")
    second = await backend.put(WS, mem("second, different"), idempotency_key="same")
    assert second == first
    other_scope = await backend.put(ALICE, mem("second, different"), idempotency_key="same")
    assert other_scope.id != first.id and other_scope.scope == ALICE


async def test_refusals(sim: VikingSimulator) -> None:
    _, strict = make_simulated(sim, shared_collection=None, global_collection=None, collections={"acme": "bridge_tenants"})
    with pytest.raises(InvalidRequest, match="GLOBAL"):
        await strict.put(ScopeKey.global_(), mem("x"), idempotency_key="k")
    with pytest.raises(InvalidRequest, match="no Viking collection"):
        await strict.search(SearchQuery(ScopeSet.of(ScopeKey.private("globex", "u")), "x"))
    with pytest.raises(UnsupportedFilter):
        await strict.search(SearchQuery(ScopeSet.of(ALICE), "x", filters={"user_id": "bob"}))
    with pytest.raises(EmptyScopeError):
        await strict.get(None, "vb" + "0" * 32)  # type: ignore[arg-type]
    assert sim.calls == []  # every refusal happened before any request


async def test_time_filters_are_pushed_down(sim: VikingSimulator, backend: VikingBackend) -> None:
    await backend.put(ALICE, mem("old tea", created_at=sim.now - 1000), idempotency_key="o")
    await backend.put(ALICE, mem("new tea"), idempotency_key="n")
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea", filters={"start_time": sim.now - 10}))
    assert [h.memory.content for h in result.hits] == ["new tea"]
    assert sim.calls_to("/search")[-1]["filter"]["start_time"] == int((sim.now - 10) * 1000)


async def test_contract_factory_yields_fresh_empty_backends() -> None:
    factory = get_adapter("viking")
    assert factory.unavailable_reason is None
    async with factory.create() as b1:
        await b1.put(ALICE, mem("sentinel"), idempotency_key="s")
        assert len(await b1.list(ALICE)) == 1
    async with factory.create() as b2:
        assert await b2.list(ALICE) == [] and await b2.list_scopes("acme") == []


def test_live_mode_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("VIKING_MEMORY_URL", "VIKING_MEMORY_COLLECTION", "VIKING_MEMORY_API_KEY", "VIKING_MEMORY_AK", "VIKING_MEMORY_SK"):
        monkeypatch.delenv(var, raising=False)
    reason = get_adapter("viking-live").unavailable_reason()
    assert reason and "VIKING_MEMORY_URL" in reason and "VIKING_MEMORY_API_KEY" in reason
    monkeypatch.setenv("VIKING_MEMORY_URL", "https://x")
    monkeypatch.setenv("VIKING_MEMORY_COLLECTION", "c")
    monkeypatch.setenv("VIKING_MEMORY_API_KEY", "k")
    assert get_adapter("viking-live").unavailable_reason() is None


async def test_live_factory_cleans_up_its_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live factory against the simulator standing in for the service (URL via transport)."""
    import contract_tests.backends.viking as vb

    sim = VikingSimulator()
    sim.create_collection("live_coll")
    sim.add_api_key("live-key")
    monkeypatch.setenv("VIKING_MEMORY_URL", "https://viking.live.test")
    monkeypatch.setenv("VIKING_MEMORY_COLLECTION", "live_coll")
    monkeypatch.setenv("VIKING_MEMORY_API_KEY", "live-key")
    real_client = vb.VikingMemoryClient
    monkeypatch.setattr(vb, "VikingMemoryClient", lambda url, auth, **kw: real_client(url, auth, transport=sim.transport(), **kw))
    async with vb.live_viking_backend() as b:
        await b.put(ALICE, mem("live sentinel"), idempotency_key="s")
        assert sim.events("live_coll")
    assert sim.events("live_coll") == []
