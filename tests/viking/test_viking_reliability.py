"""Retries with backoff (no real sleeping), RetryLater surfaced, idempotent writes, fail-closed fan-out."""

from __future__ import annotations

import pytest

from adapters.base import SearchQuery
from adapters.errors import BackendRateLimited, RetryLater, BackendUnavailable
from adapters.scopes import ScopeKey, ScopeSet
from adapters.viking import RetryPolicy, VikingBackend
from contract_tests.viking_simulator import Fault, VikingSimulator
from tests.viking.vikingkit import Waits, eventually, mem

ALICE = ScopeKey.private("acme", "alice")
WS = ScopeKey.workspace("acme", "alpha")
GLOBAL = ScopeKey.global_()


def q(*scopes: ScopeKey, text: str = "tea", limit: int = 10) -> SearchQuery:
    return SearchQuery(ScopeSet.of(*scopes), text, limit=limit)


@pytest.mark.parametrize(
    "fault",
    [Fault("http", status=429), Fault("code", code=1000029), Fault("http", status=502), Fault("http", status=503), Fault("code", code=1000028), Fault("timeout"), Fault("connect")],
    ids=["429", "1000029", "502", "503", "1000028", "timeout", "connect"],
)
async def test_transient_failures_are_retried_with_backoff(sim: VikingSimulator, backend: VikingBackend, waits: Waits, fault: Fault) -> None:
    await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    fault.path, fault.times = "/search", 2
    sim.inject(fault)
    before = len(sim.calls_to("/search"))
    result = await backend.search(q(ALICE))
    assert [h.memory.content for h in result.hits] == ["alice likes tea"]
    assert len(sim.calls_to("/search")) - before == 3
    assert waits.calls == [0.1, 0.2]  # exponential (jitter pinned to its ceiling in this test)


async def test_backoff_is_capped_and_honours_retry_after(sim: VikingSimulator, backend: VikingBackend, waits: Waits) -> None:
    sim.inject(Fault("http", status=429, retry_after="7", path="/search", times=1))
    await backend.search(q(ALICE))
    assert waits.calls == [7.0]
    policy = RetryPolicy(backoff_base=0.1, backoff_cap=2.0, jitter=lambda c: c)
    assert [policy.backoff(n) for n in range(1, 8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    jittered = RetryPolicy(backoff_base=1.0, backoff_cap=10.0)
    assert all(0.5 * min(10, 2 ** (n - 1)) <= jittered.backoff(n) <= min(10, 2 ** (n - 1)) for n in range(1, 10))


async def test_retries_are_bounded_then_typed(sim: VikingSimulator, backend: VikingBackend, waits: Waits) -> None:
    sim.inject(Fault("code", code=1000029, path="/search", times=-1))
    with pytest.raises(BackendRateLimited):
        await backend.client.search("bridge_tenants", filter={"user_id": backend.principal(ALICE), "memory_type": ["sys_event_v1"]}, kind="event")
    assert len(waits.calls) == 3
    # through the adapter the same typed failure is a failed scope, never an exception
    result = await backend.search(q(ALICE))
    assert result.failed_scopes == (ALICE,) and "RateLimited" in result.failure_reasons[0]


async def test_retry_after_beyond_the_cap_is_not_waited_for(sim: VikingSimulator, backend: VikingBackend, waits: Waits) -> None:
    sim.inject(Fault("http", status=429, retry_after="3600", path="/search", times=-1))
    with pytest.raises(BackendRateLimited) as info:
        await backend.client.search("bridge_tenants", filter={"user_id": backend.principal(ALICE), "memory_type": ["sys_event_v1"]}, kind="event")
    assert info.value.retry_after == 3600 and waits.calls == []
    result = await backend.search(q(ALICE))
    assert result.failed_scopes == (ALICE,) and "RateLimited" in result.failure_reasons[0] and waits.calls == []


async def test_index_initialising_surfaces_as_retry_later_without_retrying(sim: VikingSimulator, backend: VikingBackend, waits: Waits) -> None:
    sim.inject(Fault("code", code=1000023, path="/search", times=1))
    before = len(sim.calls_to("/search"))
    result = await backend.search(q(ALICE))  # a failed scope, typed RetryLater in its reason
    assert result.failed_scopes == (ALICE,) and "RetryLater" in result.failure_reasons[0]
    assert len(sim.calls_to("/search")) - before == 1 and waits.calls == []
    sim.inject(Fault("code", code=1000023, path="/search", times=1))
    with pytest.raises(RetryLater):
        await backend.client.search("bridge_tenants", filter={"user_id": backend.principal(ALICE), "memory_type": ["sys_event_v1"]}, kind="event")


async def test_index_init_delay_models_the_first_build(sim: VikingSimulator, backend: VikingBackend) -> None:
    sim.index_init_delay = 120
    with pytest.raises(RetryLater):
        await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    sim.advance(121)
    stored = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert (await backend.get(ALICE, stored.id)).content == "alice likes tea"


async def test_a_write_whose_answer_was_lost_is_not_duplicated(sim: VikingSimulator, backend: VikingBackend, waits: Waits) -> None:
    sim.inject(Fault("commit_then_fail", status=503, path="/event/add", match=lambda p, b: "tea" in str(b), times=1))
    stored = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    rows = [e for e in sim.all_events() if e.memory_info.get("summary") == "alice likes tea"]
    assert len(rows) == 1, "the retried write stored a second copy"
    assert (await backend.get(ALICE, stored.id)) == stored
    again = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert again == stored and len([e for e in sim.all_events() if e.memory_info.get("summary") == "alice likes tea"]) == 1


async def test_a_lost_answer_under_search_lag_leaves_copies_that_read_as_one(sim: VikingSimulator, backend: VikingBackend) -> None:
    sim.search_lag = 15
    sim.inject(Fault("commit_then_fail", status=500, path="/event/add", match=lambda p, b: "tea" in str(b), times=1))
    stored = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert len([e for e in sim.all_events() if e.group_id == stored.id]) == 2  # the lag hid the first copy
    result = await eventually(sim, lambda: backend.search(q(ALICE)), lambda r: bool(r.hits))
    assert [h.memory.id for h in result.hits] == [stored.id]
    assert [m.id for m in await backend.list(ALICE)] == [stored.id]
    assert await backend.delete(ALICE, stored.id) is True
    assert [e for e in sim.all_events() if e.group_id == stored.id] == []


async def test_event_add_is_not_blindly_retried_by_the_client(sim: VikingSimulator, backend: VikingBackend) -> None:
    sim.inject(Fault("http", status=503, path="/event/add", times=-1))
    with pytest.raises(BackendUnavailable):
        await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    # every attempt looked up first; the adapter owns the write retries (4 attempts), the client adds none
    assert len(sim.calls_to("/event/add")) == 4


async def test_fan_out_with_one_failing_collection_is_an_explicit_partial(sim: VikingSimulator, backend: VikingBackend) -> None:
    await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    await backend.put(GLOBAL, mem("global tea fact"), idempotency_key="g1")
    sim.inject(Fault("http", status=503, path="/search", match=lambda p, b: b.get("collection_name") == "bridge_global", times=-1))
    result = await backend.search(q(ALICE, WS, GLOBAL))
    assert not result.complete
    assert result.failed_scopes == (GLOBAL,)
    assert [h.memory.content for h in result.hits] == ["alice likes tea"]
    assert "Unavailable" in result.failure_reasons[0]


async def test_fan_out_where_everything_fails_is_the_same_explicit_partial(sim: VikingSimulator, backend: VikingBackend) -> None:
    """Every scope failing reads like one scope failing — failed_scopes + reasons for
    all of them, no exception — so the bridge raises RecallIncomplete carrying the reasons."""
    sim.inject(Fault("http", status=503, path="/search", times=-1))
    result = await backend.search(q(ALICE, GLOBAL))
    assert not result.complete and result.hits == ()
    assert set(result.failed_scopes) == {ALICE, GLOBAL} and len(result.failure_reasons) == 2
    assert all("Unavailable" in r for r in result.failure_reasons)


async def test_one_multi_scope_recall_costs_one_call_per_collection(sim: VikingSimulator, backend: VikingBackend) -> None:
    scopes = [ScopeKey.private("acme", "alice"), ScopeKey.agent("acme", "coder", "alice"), WS, ScopeKey.department("acme", "eng"), ScopeKey.tenant("acme")]
    for i, s in enumerate(scopes):
        await backend.put(s, mem(f"tea note {i}"), idempotency_key=f"k{i}")
    before = len(sim.calls_to("/search"))
    result = await backend.search(q(*scopes, limit=5))
    assert len(result.hits) == 5 and result.complete
    assert len(sim.calls_to("/search")) - before == 1
    before = len(sim.calls_to("/search"))
    await backend.search(q(*scopes, GLOBAL, limit=5))
    assert len(sim.calls_to("/search")) - before == 2
