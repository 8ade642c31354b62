"""The protocol's newer methods on Viking (put.created, list_page, find_by_idempotency_key), the
one fail-closed shape of a search and the public error tree."""

from __future__ import annotations

import inspect

import httpx
import pytest

from adapters.base import SearchQuery, Status
from adapters.errors import BackendError, InvalidRequest, NotSent, BackendUnavailable
from adapters.scopes import ScopeKey, ScopeSet
from adapters.viking import ApiKeyAuth, RetryPolicy, VikingBackend, VikingConfig, VikingMemoryClient
from contract_tests.viking_simulator import Fault, VikingSimulator
from tests.viking.vikingkit import mem

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
WS = ScopeKey.workspace("acme", "alpha")
GLOBAL = ScopeKey.global_()


async def test_put_says_whether_it_created_the_memory(backend: VikingBackend) -> None:
    first = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    again = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    other = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a2")
    assert (first.created, again.created, other.created) == (True, False, True)
    assert again.id == first.id and other.id != first.id


async def test_find_by_idempotency_key_sees_a_write_before_it_is_searchable(sim: VikingSimulator, backend: VikingBackend) -> None:
    sim.search_lag = 30
    stored = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert await backend.find_by_idempotency_key(ALICE, "a1") == stored  # from the write ledger
    assert await backend.find_by_idempotency_key(ALICE, "never") is None
    assert await backend.find_by_idempotency_key(BOB, "a1") is None  # the key is bound to its scope
    sim.advance(31)
    assert await backend.find_by_idempotency_key(ALICE, "a1") == stored  # from the service


async def test_list_page_walks_a_scope_larger_than_a_page_even_within_one_millisecond(backend: VikingBackend) -> None:
    """The manual clock never moves: all 23 records share one millisecond, the hardest case for a
    time cursor. Pages of 5 return every record exactly once, then no cursor."""
    ids = {(await backend.put(WS, mem(f"note {i}"), idempotency_key=f"k{i}")).id for i in range(23)}
    await backend.put(ALICE, mem("alice's own"), idempotency_key="a")
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = await backend.list_page(WS, cursor=cursor, limit=5)
        assert len(page.memories) <= 5
        seen += [m.id for m in page.memories]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert cursor is None
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))


async def test_list_page_across_milliseconds_and_statuses(sim: VikingSimulator, backend: VikingBackend) -> None:
    ids = []
    for i in range(12):
        ids.append((await backend.put(WS, mem(f"note {i}", status=Status.PENDING if i % 3 == 0 else Status.ACTIVE), idempotency_key=f"k{i}")).id)
        sim.advance(0.001 * (i % 2))  # pairs share a millisecond
    seen, cursor = [], None
    while True:
        page = await backend.list_page(WS, cursor=cursor, limit=3, statuses=frozenset({Status.ACTIVE}))
        seen += [m.id for m in page.memories]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(seen) == sorted(i for n, i in enumerate(ids) if n % 3 != 0)


async def test_a_cursor_of_another_scope_or_an_edited_one_cannot_be_used(backend: VikingBackend) -> None:
    for i in range(4):
        await backend.put(WS, mem(f"ws note {i}"), idempotency_key=f"w{i}")
        await backend.put(ALICE, mem(f"alice note {i}"), idempotency_key=f"a{i}")
    page = await backend.list_page(WS, limit=2)
    assert page.next_cursor is not None
    with pytest.raises(InvalidRequest):
        await backend.list_page(ALICE, cursor=page.next_cursor, limit=2)  # foreign: minted for WS
    body, tag = page.next_cursor.split(".")
    forged = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + tag
    for bad in (forged, "x", "", "a.b.c", page.next_cursor + "x"):
        with pytest.raises(InvalidRequest):
            await backend.list_page(WS, cursor=bad, limit=2)
    other = VikingBackend(backend.client, backend.config)  # another instance, another key
    with pytest.raises(InvalidRequest):
        await other.list_page(WS, cursor=page.next_cursor, limit=2)


def _q(*scopes: ScopeKey) -> SearchQuery:
    return SearchQuery(ScopeSet.of(*scopes), "tea")


async def test_every_scope_failing_and_one_scope_failing_have_the_same_shape(sim: VikingSimulator, backend: VikingBackend) -> None:
    """Search never raises for per-scope backend failures; it names every failed
    scope with a reason, so the bridge raises RecallIncomplete carrying them (never
    VikingUnavailable for 'all failed' and a partial result for 'one failed')."""
    await backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    await backend.put(GLOBAL, mem("global tea"), idempotency_key="g1")
    sim.inject(Fault("http", status=503, path="/search", match=lambda p, b: b.get("collection_name") == "bridge_global", times=-1))
    one = await backend.search(_q(ALICE, GLOBAL))
    sim.faults.clear()
    sim.inject(Fault("code", code=1000003, path="/search", times=-1))  # even a 'bad request' answer
    every = await backend.search(_q(ALICE, GLOBAL))
    assert one.failed_scopes == (GLOBAL,) and len(one.failure_reasons) == 1
    assert set(every.failed_scopes) == {ALICE, GLOBAL} and len(every.failure_reasons) == 2 and every.hits == ()
    assert all(r.split(":", 1)[0] in {"acme/user/alice", "global"} for r in every.failure_reasons)


async def test_failure_reasons_carry_no_secret() -> None:
    secret = "sk-live-SUPERSECRET-0003"

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"code": 1000028, "message": f"boom for {request.headers.get('authorization')}", "request_id": "r"})

    client = VikingMemoryClient("https://v.test", ApiKeyAuth(secret), transport=httpx.MockTransport(echo), retry=RetryPolicy(attempts=1))
    backend = VikingBackend(client, VikingConfig(shared_collection="c"))
    result = await backend.search(_q(ALICE, WS))
    assert result.failed_scopes and all(secret not in r and "<redacted>" in r for r in result.failure_reasons)


async def test_no_private_class_escapes_as_an_error_type() -> None:
    """A connect failure used to surface as `adapters.viking.client._NotSent`."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = VikingMemoryClient("https://v.test", ApiKeyAuth("k"), transport=httpx.MockTransport(refuse), retry=RetryPolicy(attempts=1))
    with pytest.raises(BackendError) as info:
        await client.search("c", filter={"user_id": "u1", "memory_type": ["sys_event_v1"]}, kind="event")
    assert isinstance(info.value, NotSent) and isinstance(info.value, BackendUnavailable)
    for cls in type(info.value).__mro__:
        assert not cls.__name__.startswith("_"), f"private class {cls.__module__}.{cls.__qualname__} escaped"
    import adapters.viking.client as client_module

    private = [n for n, obj in vars(client_module).items() if n.startswith("_") and inspect.isclass(obj) and issubclass(obj, BaseException)]
    assert private == []
