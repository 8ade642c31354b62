"""The backend protocol against a real OpenViking 0.5.2 server, in both deployment modes."""

from __future__ import annotations

import httpx
import pytest

from adapters.base import MemoryPatch, Provenance, SearchQuery, Status
from adapters.errors import EmptyScopeError, BackendNotFound, UnsupportedFilter
from adapters.openviking.record import encode_record
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from contract_tests.backends.openviking import fresh_backend
from tests.openviking.ovhelpers import mem

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
CODER = ScopeKey.agent("acme", "coder", "alice")
WRITER = ScopeKey.agent("acme", "writer", "alice")
WS = ScopeKey.workspace("acme", "alpha")


async def test_round_trip_put_get_search_list_list_scopes_delete(backend):
    prov = Provenance("alice", "coder", session_id="s9", source_message_ids=("m1", "m2"), derived_from=("x1",), grant_id="g1")
    new = mem("Alice prefers sencha green tea", kind="preference", provenance=prov, status=Status.ACTIVE,
              confidence=0.75, subject_user_id="alice", metadata={"lang": "en", "n": 3, "ok": True, "none": None, "f": 0.5})
    stored = await backend.put(ALICE, new, idempotency_key="pref-1")
    assert stored.scope == ALICE and stored.content == new.content
    got = await backend.get(ALICE, stored.id)
    assert got == stored, "every protocol field must round-trip through the server"
    assert dict(got.metadata) == {"lang": "en", "n": 3, "ok": True, "none": None, "f": 0.5}
    assert got.provenance == prov and got.subject_user_id == "alice" and got.confidence == 0.75

    await backend.put(WS, mem("the alpha project uses green tea breaks"), idempotency_key="ws-1")
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE, WS), "green tea"))
    assert result.complete
    assert {h.scope for h in result.hits} == {ALICE, WS}
    assert all(0.0 <= h.score <= 1.0 and h.scope == h.memory.scope for h in result.hits)

    assert [m.id for m in await backend.list(ALICE)] == [stored.id]
    assert set(await backend.list_scopes("acme")) == {ALICE, WS}
    assert await backend.list_scopes("other-tenant") == []

    assert await backend.delete(ALICE, stored.id) is True
    assert await backend.delete(ALICE, stored.id) is False
    with pytest.raises(BackendNotFound):
        await backend.get(ALICE, stored.id)
    after = await backend.search(SearchQuery(ScopeSet.of(ALICE), "green tea"))
    assert stored.id not in {h.memory.id for h in after.hits}, "a deleted memory must not be recalled"


async def test_put_is_idempotent_per_scope_and_keys_do_not_collide_across_scopes(backend):
    first = await backend.put(ALICE, mem("first text"), idempotency_key="same")
    again = await backend.put(ALICE, mem("second text"), idempotency_key="same")
    assert again == first and (await backend.get(ALICE, first.id)).content == "first text"
    bobs = await backend.put(BOB, mem("bob's text"), idempotency_key="same")
    assert bobs.id != first.id
    assert (await backend.get(ALICE, first.id)).content == "first text"
    with pytest.raises(BackendNotFound):
        await backend.get(BOB, first.id)  # another scope's id is BackendNotFound
    assert len(await backend.list(ALICE)) == 1


async def test_user_private_memory_invisible_to_another_user(backend):
    a = await backend.put(ALICE, mem("alice secret diary entry about tea"), idempotency_key="k")
    await backend.put(BOB, mem("bob notes about coffee"), idempotency_key="k")
    result = await backend.search(SearchQuery(ScopeSet.of(BOB), "alice secret diary entry about tea", limit=50))
    assert a.id not in {h.memory.id for h in result.hits}, "bob recalled alice's private memory"
    assert all(h.scope == BOB for h in result.hits)


async def test_lookalike_ids_stay_isolated(backend):
    s1, s2 = ScopeKey.private("acme", "john_doe"), ScopeKey.private("acme", "john-doe")
    s3, s4 = ScopeKey.workspace("acme", "foo"), ScopeKey.workspace("acme", "foobar")
    for s in (s1, s2, s3, s4):
        await backend.put(s, mem(f"shared words for {s}"), idempotency_key="k")
    for s in (s1, s2, s3, s4):
        hits = (await backend.search(SearchQuery(ScopeSet.of(s), "shared words for", limit=10))).hits
        assert [h.scope for h in hits] == [s], f"search in {s} returned {[str(h.scope) for h in hits]}"


async def test_status_and_kind_filters_still_fill_the_limit(backend):
    for i in range(14):  # many near-identical pending rows that out-score the active ones
        await backend.put(ALICE, mem(f"green tea green tea note {i}", status=Status.PENDING), idempotency_key=f"p{i}")
    for i in range(4):
        await backend.put(ALICE, mem(f"tea remark {i}", kind="preference"), idempotency_key=f"a{i}")
    await backend.put(ALICE, mem("tea remark as a fact"), idempotency_key="f")
    hits = (await backend.search(SearchQuery(ScopeSet.of(ALICE), "green tea", limit=4, kinds=frozenset({"preference"})))).hits
    assert len(hits) == 4 and all(h.memory.kind == "preference" and h.memory.status is Status.ACTIVE for h in hits)
    pending = (await backend.search(SearchQuery(ScopeSet.of(ALICE), "green tea", limit=3, statuses=frozenset({Status.PENDING})))).hits
    assert len(pending) == 3 and all(h.memory.status is Status.PENDING for h in pending)


async def test_memory_ids_restriction_returns_only_listed_memories(backend):
    keep = await backend.put(WS, mem("alpha design decision tea"), idempotency_key="keep")
    await backend.put(WS, mem("alpha design decision tea too"), idempotency_key="other")
    scopes = ScopeSet.of(ScopeEntry(WS, memory_ids=frozenset({keep.id, "m" + "f" * 32, "../evil"})))
    hits = (await backend.search(SearchQuery(scopes, "alpha design decision tea"))).hits
    assert [h.memory.id for h in hits] == [keep.id]


async def test_update_changes_fields_in_place(backend):
    stored = await backend.put(ALICE, mem("draft fact"), idempotency_key="u")
    updated = await backend.update(ALICE, stored.id, MemoryPatch(status=Status.SUPERSEDED, metadata={"v": 2}))
    got = await backend.get(ALICE, stored.id)
    assert got == updated and got.status is Status.SUPERSEDED and dict(got.metadata) == {"v": 2} and got.scope == ALICE
    assert not (await backend.search(SearchQuery(ScopeSet.of(ALICE), "draft fact"))).hits  # active only by default


async def test_empty_scope_set_and_unknown_filters_raise(backend):
    with pytest.raises(Exception):
        SearchQuery(ScopeSet.of(), "x")  # type: ignore[call-arg]
    with pytest.raises(UnsupportedFilter):
        await backend.search(SearchQuery(ScopeSet.of(ALICE), "x", filters={"tag": "a"}))
    with pytest.raises(EmptyScopeError):
        await backend.get(None, "m" + "0" * 32)  # type: ignore[arg-type]


async def test_global_scope_round_trip(backend):
    g = ScopeKey.global_()
    stored = await backend.put(g, mem("public handbook about tea"), idempotency_key="g")
    try:
        hits = (await backend.search(SearchQuery(ScopeSet.of(g, ALICE), "public handbook about tea"))).hits
        assert [h.scope for h in hits] == [g] and hits[0].memory.id == stored.id
    finally:
        await backend.drop_global()


async def test_foreign_files_in_a_scope_directory_are_never_returned(backend):
    """A file without our header, or whose header names another scope, is dropped (scope unknown)."""
    real = await backend.put(ALICE, mem("tea ceremony facts"), idempotency_key="real")
    p = backend.mapper.principal(ALICE)
    bob_record = (await backend.put(BOB, mem("tea ceremony facts from bob"), idempotency_key="b"))
    forged = encode_record(bob_record)  # header says acme/user/bob, but it sits in alice's directory
    auth = await backend._auth(p, create=True)
    await backend.client.write(auth, p.memory_uri("m" + "1" * 32), forged, wait=True)
    await backend.client.write(auth, p.memory_uri("m" + "2" * 32), "tea ceremony facts, no header", wait=True)
    await backend.client.write(auth, f"{p.memory_dir}/notes.md", "tea ceremony facts, not a memory id", wait=True)
    hits = (await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea ceremony facts", limit=10))).hits
    assert [h.memory.id for h in hits] == [real.id]
    assert [m.id for m in await backend.list(ALICE)] == [real.id]


async def test_agent_memory_invisible_to_other_agents_of_the_same_user(backend):
    """OpenViking peers: context search with the default peer_scope leaks other peers; ours never does."""
    coder = await backend.put(CODER, mem("coder private deployment trick"), idempotency_key="k")
    writer = await backend.put(WRITER, mem("writer private style trick"), idempotency_key="k")
    private = await backend.put(ALICE, mem("alice private trick"), idempotency_key="k")
    result = await backend.search(SearchQuery(ScopeSet.of(WRITER), "coder private deployment trick", limit=20))
    assert {h.memory.id for h in result.hits} == {writer.id}
    result = await backend.search(SearchQuery(ScopeSet.of(CODER, ALICE), "private trick", limit=20))
    assert {h.memory.id for h in result.hits} == {coder.id, private.id}

    # the raw server, same user, actor = writer: context mode with the default peer_scope leaks
    p = backend.mapper.principal(WRITER)
    auth = (await backend._auth(p, create=False))
    raw = await backend.client.search(auth, "coder private deployment trick", mode="context", limit=20)
    leaked = [e["uri"] for e in raw["entries"] if e["uri"].endswith(f"{coder.id}.md")]
    assert leaked, "expected the documented OpenViking behaviour (peer_scope=all leaks other peers)"
    safe = await backend.client.search(auth, "coder private deployment trick", mode="context", limit=20, peer_scope="actor")
    assert not [e for e in safe["entries"] if e["uri"].endswith(f"{coder.id}.md")]


async def test_fan_out_fails_closed_when_one_principal_fails(api_key_server):
    """A MockTransport wrapper fails every call made with bob's principal: the result says so."""
    url, root = api_key_server
    real = httpx.AsyncHTTPTransport()
    bob_user = None

    class FailOne(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            body = request.content.decode(errors="ignore")
            if bob_user and request.url.path.endswith("/search/find") and bob_user in body:
                return httpx.Response(503, json={"status": "error", "result": None,
                                                 "error": {"code": "UNAVAILABLE", "message": "down", "details": {}}})
            return await real.handle_async_request(request)

    from adapters.openviking.client import RetryPolicy

    async def no_sleep(seconds: float) -> None:
        pass

    async with fresh_backend("api_key", transport=FailOne(), retry=RetryPolicy(attempts=2, sleep=no_sleep)) as b:
        bob_user = b.mapper.principal(BOB).user
        await b.put(ALICE, mem("quarterly report tea"), idempotency_key="k")
        await b.put(BOB, mem("quarterly report tea bob"), idempotency_key="k")
        result = await b.search(SearchQuery(ScopeSet.of(ALICE, BOB), "quarterly report tea"))
        assert not result.complete and result.failed_scopes == (BOB,)
        assert "RetryLater" in result.failure_reasons[0] or "UNAVAILABLE" in result.failure_reasons[0]
        assert [h.scope for h in result.hits] == [ALICE]
