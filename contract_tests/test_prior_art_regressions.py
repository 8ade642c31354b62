"""Regressions from real leaks in other memory layers (research/prior-art.md, last table).

One test per row (some rows need two). Each docstring names the original bug; each failure names
the guarantee, the identity or scope that saw the memory, and how to reproduce.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields

import pytest

from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status, StoredMemory
from adapters.errors import EmptyScopeError, InvalidRequest, BackendNotFound, UnsupportedFilter
from adapters.scopes import EmptyScopeSetError, ScopeKey, ScopeSet
from bridge.errors import InvalidInput, ManifestError, NotPermitted
from contract_tests.harness import ContractEnv, eventually, leak_message
from contract_tests.registry import AdapterFactory
from identity.errors import InvalidCredential, SessionIdentityMismatch
from identity.ids import InvalidIdError

pytestmark = pytest.mark.asyncio

BIG = 20000
ALL = frozenset(Status)


def new(content: str, *, author: str = "alice", agent: str = "assistant", kind: str = "note", metadata: dict | None = None) -> NewMemory:
    return NewMemory(content=content, kind=kind, provenance=Provenance(author_user_id=author, author_agent_id=agent), subject_user_id=author, metadata=metadata or {})


async def put(env: ContractEnv, scope: ScopeKey, content: str, key: str, **kw: object) -> StoredMemory:
    stored = await env.backend.put(scope, new(content, **kw), idempotency_key=key)  # type: ignore[arg-type]
    assert stored.scope == scope, leak_message(
        "a record's scope is the ScopeKey it was written to", f"backend.put({scope})", stored.id, str(stored.scope), content=content, reproduce=env.reproduce
    )
    return stored


async def search(env: ContractEnv, scopes: ScopeSet, text: str, *, limit: int = 10, must_see: set[str] = frozenset(), **kw: object):  # type: ignore[assignment]
    """Backend search, polled until `must_see` ids are present; checks every hit is inside `scopes`."""

    async def probe():
        result = await env.backend.search(SearchQuery(scopes, text, limit=limit, **kw))  # type: ignore[arg-type]
        for hit in result.hits:
            if hit.scope not in scopes or hit.memory.scope != hit.scope or not scopes.permits(hit.scope, hit.memory.id):
                pytest.fail(leak_message(
                    "search returns only memories of the ScopeSet it is given, tagged with the scope they are stored in",
                    f"backend.search over {[str(k) for k in scopes.keys]}", hit.memory.id, f"{hit.memory.scope} (tagged {hit.scope})",
                    content=hit.memory.content, reproduce=env.reproduce,
                ), pytrace=False)
        return result

    return await eventually(probe, lambda r: must_see <= {h.memory.id for h in r.hits}, timeout=env.settle_timeout, describe=f"GUARANTEE BROKEN: a search returns the permitted memories that exist (search for {text!r} over {[str(k) for k in scopes.keys]} never showed {sorted(must_see)}; reproduce: {env.reproduce})")


def snapshot(rows: list[StoredMemory]) -> str:
    def one(m: StoredMemory) -> dict:
        out = {}
        for f in fields(m):
            v = getattr(m, f.name)
            if f.name == "metadata":
                v = dict(sorted(dict(v).items()))
            elif f.name == "provenance":
                v = repr(v)
            elif f.name in ("scope", "status"):
                v = str(v)
            out[f.name] = v
        return out

    return json.dumps(sorted((one(m) for m in rows), key=lambda d: d["id"]), sort_keys=True, ensure_ascii=False)


def forged_empty_scope_set() -> ScopeSet:
    """An empty ScopeSet as a caller bug could produce it (the constructor refuses to)."""
    empty = object.__new__(ScopeSet)
    object.__setattr__(empty, "entries", ())
    object.__setattr__(empty, "_by_key", {})
    return empty


def forged_query(scopes: object, text: str) -> SearchQuery:
    query = object.__new__(SearchQuery)
    given = {"scopes": scopes, "text": text, "limit": 50}
    for f in fields(SearchQuery):  # every field, so a field added later is there with its default
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        object.__setattr__(query, f.name, given.get(f.name, default))
    return query


async def _populate(env: ContractEnv) -> dict[ScopeKey, StoredMemory]:
    scopes = [
        ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "bob"), ScopeKey.workspace("acme", "alpha"),
        ScopeKey.department("acme", "eng"), ScopeKey.tenant("acme"), ScopeKey.global_(), ScopeKey.private("globex", "alice"),
    ]
    out = {}
    for n, scope in enumerate(scopes):
        out[scope] = await put(env, scope, f"quarterly roadmap memory number {n} stored in {scope}", f"populate-{n}")
    await search(env, ScopeSet.of(*scopes), "quarterly roadmap memory", limit=50, must_see={m.id for m in out.values()})
    return out


# -- an empty or unbuildable filter became "no filter" (mem0 + Qdrant) ---------------------------
async def test_empty_scope_set_never_searches_everything(contract: ContractEnv) -> None:
    """mem0 + Qdrant: an empty filter became "no filter". Guarantee: a search with an empty scope
    set (or no scope at all) never returns a single memory — it raises, it never searches all."""
    await _populate(contract)
    for label, scopes in (("an empty ScopeSet", forged_empty_scope_set()), ("scopes=None", None)):
        try:
            result = await contract.backend.search(forged_query(scopes, "quarterly roadmap memory"))
        except (InvalidRequest, EmptyScopeSetError, TypeError, ValueError):
            continue
        if result.hits:
            hit = result.hits[0]
            pytest.fail(leak_message(
                "a search with no scope or an empty scope set never searches everything",
                f"backend.search with {label}", hit.memory.id, str(hit.scope), content=hit.memory.content, reproduce=contract.reproduce,
                detail=f"{len(result.hits)} memories returned",
            ), pytrace=False)


async def test_empty_scope_set_or_missing_scope_raises(contract: ContractEnv) -> None:
    """mem0 + Qdrant. Guarantee (adapters/base.py): every call names a ScopeKey or a non-empty
    ScopeSet; an empty one RAISES (EmptyScopeError / EmptyScopeSetError), so the caller's bug is
    loud instead of looking like "no memories"."""
    with pytest.raises(EmptyScopeSetError):
        ScopeSet.of()
    with pytest.raises(EmptyScopeError):
        SearchQuery(None, "anything")  # type: ignore[arg-type]
    backend = contract.backend
    for call in (
        lambda: backend.put(None, new("x"), idempotency_key="k1"),  # type: ignore[arg-type]
        lambda: backend.get(None, "some-id"),  # type: ignore[arg-type]
        lambda: backend.update(None, "some-id", MemoryPatch(content="y")),  # type: ignore[arg-type]
        lambda: backend.delete(None, "some-id"),  # type: ignore[arg-type]
        lambda: backend.list(None),  # type: ignore[arg-type]
    ):
        with pytest.raises(EmptyScopeError):
            await call()
    for label, scopes in (("an empty ScopeSet", forged_empty_scope_set()), ("scopes=None", None)):
        try:
            result = await backend.search(forged_query(scopes, "anything"))
        except (InvalidRequest, EmptyScopeSetError):
            continue
        pytest.fail(
            f"GUARANTEE BROKEN: a search with {label} raises EmptyScopeError; {backend.name} returned "
            f"{len(result.hits)} hit(s) instead of raising. Reproduce: {contract.reproduce}",
            pytrace=False,
        )


# -- post-filter over top_k*2; empty payload counted as a match (mem0 + FAISS) -----------------
async def test_rows_without_scope_metadata_are_never_returned(contract: ContractEnv, adapter_factory: AdapterFactory) -> None:
    """mem0 + FAISS: a row with an empty payload matched every filter. Guarantee: a row whose scope
    cannot be established is never returned by any search."""
    if adapter_factory.insert_unscoped is None:
        pytest.skip(f"adapter {contract.adapter!r} registers no insert_unscoped hook (register_adapter(..., insert_unscoped=...)); cannot plant an unscoped row")
    populated = await _populate(contract)
    text = "unscoped orphan row: payroll export of every employee"
    await adapter_factory.insert_unscoped(contract.backend, "acme", text)
    every = ScopeSet.of(*populated, ScopeKey.agent("acme", "assistant", "alice"), ScopeKey.department("acme", "sales"))
    result = await search(contract, every, text, limit=50, must_see={m.id for m in populated.values()})
    for hit in result.hits:
        assert hit.memory.content != text, leak_message(
            "rows without scope metadata are never returned", "backend.search over every populated scope", hit.memory.id, str(hit.scope),
            content=hit.memory.content, reproduce=contract.reproduce,
        )
    if contract.capabilities.list_scopes:
        assert set(await contract.backend.list_scopes("acme")) <= set(populated), "list_scopes returned a scope nobody wrote"


async def test_heavily_filtered_search_returns_k_permitted_rows(contract: ContractEnv) -> None:
    """mem0 + FAISS: post-filtering a global top_k*2 returned too few rows. Guarantee: a search
    returns `limit` permitted rows whenever that many exist, even when 200 foreign rows are closer
    to the query (the filter is applied before the top-k, not after)."""
    query = "release checklist for the payments service"
    foreign = [ScopeKey.private("acme", f"user{n}") for n in range(8)] + [ScopeKey.workspace("acme", "beta"), ScopeKey.private("globex", "alice")]
    for n in range(200):
        await put(contract, foreign[n % len(foreign)], f"{query} — variant {n}", f"foreign-{n}", author=f"user{n % 8}")
    mine = ScopeKey.private("acme", "alice")
    permitted = [await put(contract, mine, f"alice gardening note {n}: water the tomatoes at dawn", f"mine-{n}") for n in range(5)]
    want = {m.id for m in permitted}
    result = await search(contract, ScopeSet.of(mine), query, limit=5, must_see=want)
    assert len(result.hits) == 5, (
        f"GUARANTEE BROKEN: a heavily filtered search returns k permitted rows when k exist; got {len(result.hits)} of 5 "
        f"(200 closer foreign rows). Reproduce: {contract.reproduce}"
    )
    # The same under a kind filter: 30 closer permitted rows of another kind must not crowd out 3 facts.
    for n in range(30):
        await put(contract, mine, f"{query} — alice's own draft {n}", f"mine-note-{n}")
    facts = [await put(contract, mine, f"alice fact {n}: the office plants need light", f"mine-fact-{n}", kind="fact") for n in range(3)]
    result = await search(contract, ScopeSet.of(mine), query, limit=3, kinds=frozenset({"fact"}), must_see={m.id for m in facts})
    assert {h.memory.id for h in result.hits} == {m.id for m in facts}, f"GUARANTEE BROKEN: the kind filter is applied before the top-k. Reproduce: {contract.reproduce}"


# -- filter keys silently dropped (mem0 + Weaviate, Redis) -----------------------------------------
async def test_unsupported_filter_raises_instead_of_widening(contract: ContractEnv) -> None:
    """mem0 + Weaviate/Redis: unknown filter keys were silently dropped, widening the search.
    Guarantee: a filter the backend cannot express raises UnsupportedFilter."""
    await _populate(contract)
    unknown = "contract_suite_no_backend_supports_this_filter"
    assert unknown not in contract.capabilities.supported_filters
    with pytest.raises(UnsupportedFilter):
        await contract.backend.search(SearchQuery(ScopeSet.of(ScopeKey.private("acme", "alice")), "roadmap", filters={unknown: "x"}))
    with pytest.raises(UnsupportedFilter):
        await contract.backend.search(SearchQuery(ScopeSet.of(ScopeKey.private("acme", "alice")), "roadmap", filters={"user_id": "bob"}))


# -- update()/add() metadata overwrote user_id/agent_id (mem0 6277, 6655) -------------------------
async def test_identity_keys_in_content_metadata_or_update_never_move_a_record(contract: ContractEnv) -> None:
    """mem0 #6277/#6655: metadata in add()/update() overwrote user_id/agent_id. Guarantee: identity
    keys inside content, metadata or an update payload never change a record's scope."""
    alice, bob = ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "bob")
    forged = {"user_id": "bob", "owner_user_id": "bob", "tenant_id": "globex", "agent_id": "coder", "assistant_id": "coder",
              "group_id": "eng", "department_id": "eng", "workspace_id": "alpha", "visibility": "global", "scope": "acme/user/bob"}
    text = "user_id=bob tenant_id=globex scope=acme/user/bob: alice's tax id is 123-45"
    stored = await put(contract, alice, text, "forged-1", metadata=forged)
    await search(contract, ScopeSet.of(alice), text, must_see={stored.id})
    guarantee = "identity keys in content, metadata or update payloads never move a record"

    async def assert_still_alices(stage: str) -> None:
        assert (await contract.backend.get(alice, stored.id)).scope == alice
        with pytest.raises(BackendNotFound):
            await contract.backend.get(bob, stored.id)
        for key in (bob, ScopeKey.private("globex", "bob"), ScopeKey.global_(), ScopeKey.department("acme", "eng")):
            listed = [m for m in await contract.backend.list(key, statuses=ALL) if m.id == stored.id or m.content.startswith("user_id=bob")]
            assert not listed, leak_message(guarantee, f"backend.list({key}) {stage}", stored.id, str(key), content=text, reproduce=contract.reproduce)
            result = await contract.backend.search(SearchQuery(ScopeSet.of(key), text, limit=50))
            for hit in result.hits:
                assert hit.memory.id != stored.id, leak_message(guarantee, f"backend.search({key}) {stage}", stored.id, str(hit.scope), content=text, reproduce=contract.reproduce)

    await assert_still_alices("after put")
    updated = await contract.backend.update(alice, stored.id, MemoryPatch(content="user_id: bob — updated " + text, metadata={**forged, "user_id": "bob"}))
    assert updated.scope == alice, leak_message(guarantee, "backend.update", stored.id, str(updated.scope), reproduce=contract.reproduce)
    await search(contract, ScopeSet.of(alice), "updated " + text, must_see={stored.id})
    await assert_still_alices("after update")


# -- delete_all wiped every user (mem0 3928, 3746) ------------------------------------------------
async def test_scoped_delete_leaves_every_other_scope_byte_for_byte(contract: ContractEnv) -> None:
    """mem0 #3928/#3746: delete_all called reset and wiped every user. Guarantee: deleting in one
    scope (and forgetting a subject) leaves every other scope untouched, byte for byte."""
    keys = [
        ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "alice_"), ScopeKey.private("acme", "alice2"),
        ScopeKey.private("acme", "bob"), ScopeKey.private("globex", "alice"), ScopeKey.agent("acme", "assistant", "bob"),
        ScopeKey.workspace("acme", "alpha"), ScopeKey.department("acme", "eng"), ScopeKey.tenant("acme"), ScopeKey.global_(),
    ]
    for n, key in enumerate(keys):
        author = key.owner_id if key.visibility.value == "private" else "bob"
        for i in range(3):
            await put(contract, key, f"memory {i} of {key}", f"snap-{n}-{i}", author=author or "bob")
    before = {k: snapshot(list(await contract.backend.list(k, statuses=ALL))) for k in keys}
    target = keys[0]
    for m in await contract.backend.list(target, statuses=ALL):
        assert await contract.backend.delete(target, m.id) is True
    assert not await contract.backend.list(target, statuses=ALL)
    for key in keys[1:]:
        after = snapshot(list(await contract.backend.list(key, statuses=ALL)))
        assert after == before[key], f"GUARANTEE BROKEN: a scoped delete in {target} changed scope {key}.\nbefore: {before[key]}\nafter:  {after}\nReproduce: {contract.reproduce}"

    # The same through the bridge: alice forgets herself; other users (and alice of another tenant) are untouched.
    alice = await contract.ids.login("alice_", departments=["eng"], workspace="alpha")
    removed = await contract.bridge.forget_subject(alice, "alice_")
    assert removed == 3
    for key in keys[2:]:
        after = snapshot(list(await contract.backend.list(key, statuses=ALL)))
        assert after == before[key], f"GUARANTEE BROKEN: forget_subject('alice_') changed scope {key}. Reproduce: {contract.reproduce}"


# -- Bob's add updated Alice's memory (mem0 2170) -------------------------------------------------
async def test_colliding_record_ids_and_idempotency_keys_in_two_scopes_stay_separate(contract: ContractEnv) -> None:
    """mem0 #2170: Bob's add updated Alice's memory. Guarantee: the same idempotency key (and any
    record id) used in two scopes names two separate records."""
    alice, bob = ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "bob")
    a = await put(contract, alice, "alice: my locker code is 4711", "same-key")
    b = await put(contract, bob, "bob: my locker code is 0815", "same-key", author="bob")
    assert (await contract.backend.get(alice, a.id)).content == "alice: my locker code is 4711"
    assert (await contract.backend.get(bob, b.id)).content == "bob: my locker code is 0815"
    for scope, other in ((alice, b), (bob, a)):
        try:
            got = await contract.backend.get(scope, other.id)
        except BackendNotFound:
            continue
        assert got.scope == scope and got.content != other.content, leak_message(
            "colliding ids in two scopes stay separate", f"backend.get({scope})", other.id, str(other.scope), content=got.content, reproduce=contract.reproduce)

    ids, bridge = contract.ids, contract.bridge
    u_alice = await ids.login("alice", workspace="alpha")
    u_bob = await ids.login("bob", workspace="alpha")
    wa = await bridge.remember(u_alice, "Decision: the alpha API is versioned in the URL", "decision", idempotency_key="decision-1")
    wb = await bridge.remember(u_bob, "Decision: the alpha API is versioned in a header", "decision", idempotency_key="decision-1")
    assert wa.scope == wb.scope == "acme/ws/alpha"
    assert wa.memory_id != wb.memory_id and not wb.deduplicated, "GUARANTEE BROKEN: Bob's write with Alice's idempotency key returned Alice's memory"
    assert (await contract.backend.get(ScopeKey.workspace("acme", "alpha"), wa.memory_id)).content.endswith("in the URL")


# -- unescaped LIKE / prefix matching (LangGraph 8300) ---------------------------------------------
SPECIAL_USERS = ["john_doe", "john-doe", "john%doe", "john*doe", "john.doe", "john@doe", "johnXdoe", "foo", "foobar", "fo", "zoë", "zoe", "研发部", "研发部门"]
SPECIAL_DEPTS = ["eng_", "eng%", "eng", "engineering", "研发部", "研发"]


async def test_ids_with_special_characters_unicode_and_prefixes_stay_isolated(contract: ContractEnv) -> None:
    """LangGraph #8300 (unescaped LIKE): `john_doe` matched `john-doe`, prefix `foo` matched
    `foobar`. Guarantee: ids containing `_ % * . - @`, unicode ids and ids that are prefixes of
    other ids are exact, isolated principals; ids with `/` or `..` are rejected."""
    ids, bridge = contract.ids, contract.bridge
    users = {}
    written: dict[str, list] = {}
    for n, user in enumerate(SPECIAL_USERS):
        dept = SPECIAL_DEPTS[n % len(SPECIAL_DEPTS)]
        ident = await ids.login(user, departments=[dept], workspace=f"ws{user}", roles=["approver"])
        users[user] = ident
        written[user] = [
            await bridge.remember(ident, f"shared isolation probe: private profile of {user}", "profile"),
            await bridge.remember(ident, f"shared isolation probe: workspace decision of ws{user}", "decision"),
            await bridge.remember(ident, f"shared isolation probe: standard of department {dept} (by {user})", "standard"),
        ]
    for user, ident in users.items():
        own_scopes = {w.scope for w in written[user]}
        result = await contract.recall(ident, "shared isolation probe", must_see=[w.memory_id for w in written[user][:2]], budget_tokens=BIG)
        for item in result.items:
            if item.scope not in own_scopes and item.scope not in (f"acme/dept/{d}" for d in ident.department_ids):
                pytest.fail(leak_message("ids with _ % * . - @, unicode and prefixes stay isolated", ident, item.memory_id, item.scope, content=item.content, reproduce=contract.reproduce), pytrace=False)

    for bad in ("john/doe", "../alice", "alice/..", "a..b", "..", "john\\doe"):
        with pytest.raises(InvalidIdError):
            ids.issue_key(bad)
        with pytest.raises((InvalidIdError, ValueError)):
            ScopeKey.private("acme", bad)
    with pytest.raises(InvalidCredential):
        await ids.via_gateway("john/doe", session_id="s-slash")  # travels as john%2Fdoe; refused once decoded
    alice = users["john_doe"]
    with pytest.raises(InvalidInput):
        await bridge.forget(alice, ("acme/user/../john-doe", written["john-doe"][0].memory_id))
    with pytest.raises(InvalidInput):
        await bridge.recall(alice, "probe", include_scopes=["acme/ws/../dept/eng"])
    assert (await contract.backend.get(ScopeKey.private("acme", "john-doe"), written["john-doe"][0].memory_id)).content.endswith("john-doe")


# -- deleted memories still served from a cache (LongMemory 186); GDPR delete (AutoGPT 12720) -----
async def test_nothing_recallable_after_forget(contract: ContractEnv) -> None:
    """LongMemory #186: deleted memories were still served from a cache. Guarantee: after forget,
    no recall path (search, get, list, injection manifests) returns the memory, and an audit row remains."""
    ids, bridge = contract.ids, contract.bridge
    alice = await ids.login("alice", departments=["eng"], workspace="alpha")
    child = await ids.login("alice", agent="researcher", departments=["eng"], workspace="alpha")
    text = "Alice private preference: never schedule meetings on Friday afternoons"
    m = await bridge.remember(alice, text, "procedure")  # agent-owned: the child sees it only via the manifest
    keep = await bridge.remember(alice, "Alice private preference: meetings on Monday mornings are fine", "procedure")
    await contract.recall(alice, text, must_see=[m.memory_id], budget_tokens=BIG)  # warms every cache on the path
    manifest = await bridge.inject(alice, "researcher", "plan meetings", memory_refs=[m.ref, keep.ref])
    await contract.recall(child, text, manifest_id=manifest.manifest_id, must_see=[m.memory_id], budget_tokens=BIG)

    assert await bridge.forget(alice, m.ref) is True
    guarantee = "after forget, no recall path returns the memory"
    scope = ScopeKey.parse(m.scope)
    for reader, kwargs in ((alice, {}), (child, {"manifest_id": manifest.manifest_id})):
        after = await contract.recall(reader, text, must_see=[keep.memory_id], budget_tokens=BIG, **kwargs)
        contract.assert_not_seen(after, [m], guarantee=guarantee, reader=reader)
    with pytest.raises(BackendNotFound):
        await contract.backend.get(scope, m.memory_id)
    assert m.memory_id not in {x.id for x in await contract.backend.list(scope, statuses=ALL)}, f"{guarantee}: still listed in {scope}"
    direct = await contract.backend.search(SearchQuery(ScopeSet.of(scope), text, limit=50, statuses=ALL))
    assert m.memory_id not in {h.memory.id for h in direct.hits}, f"{guarantee}: backend.search still returns {m.memory_id}"
    assert [e for e in await bridge.audit_events(alice, action="forget") if m.memory_id in e.memory_ids], "forget left no audit row"
    assert await bridge.forget(alice, m.ref) is False


async def test_nothing_recallable_after_forget_subject(contract: ContractEnv) -> None:
    """AutoGPT #12720 / mem0 #3245: a GDPR delete missed the episode log / the graph. Guarantee:
    forget_subject removes every trace of the subject (every scope, search, get, list, manifests)
    and leaves an audit row; other users' memories stay."""
    ids, bridge = contract.ids, contract.bridge
    alice = await ids.login("alice", departments=["eng"], workspace="alpha", roles=["approver"])
    bob = await ids.login("bob", departments=["eng"], workspace="alpha")
    child = await ids.login("alice", agent="researcher", departments=["eng"], workspace="alpha")
    alices = [
        await bridge.remember(alice, "Alice subject data: prefers vegetarian food", "preference"),
        await bridge.remember(alice, "Alice subject data: workspace decision to use Rust", "decision"),
        await bridge.remember(alice, "Alice subject data: department standard on code review", "standard"),
        await bridge.remember(alice, "Alice subject data: tool experience with cargo", "experience"),
    ]
    bobs = await bridge.remember(bob, "Bob data: workspace decision to use Rust nightly", "decision")
    await contract.recall(alice, "Alice subject data", must_see=[w.memory_id for w in alices], budget_tokens=BIG)
    manifest = await bridge.inject(alice, "researcher", "food", memory_refs=[alices[3].ref])

    removed = await bridge.forget_subject(alice, "alice")
    assert removed >= len(alices), f"forget_subject removed {removed} memories, expected at least {len(alices)}"
    guarantee = "forget_subject removes every trace of the subject"
    after = await contract.recall(bob, "Alice subject data: workspace decision to use Rust", must_see=[bobs.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(after, alices, guarantee=guarantee, reader=bob)
    try:  # the subject's manifests may be purged outright (fail closed) or emptied of the memory
        after = await bridge.recall(child, "Alice subject data: tool experience with cargo", manifest_id=manifest.manifest_id, budget_tokens=BIG)
    except ManifestError:
        pass
    else:
        contract.assert_not_seen(after, alices, guarantee=guarantee + " (injection manifests)", reader=child)
    for w in alices:
        with pytest.raises(BackendNotFound):
            await contract.backend.get(ScopeKey.parse(w.scope), w.memory_id)
    for key in await contract.backend.list_scopes("acme"):
        for m in await contract.backend.list(key, statuses=ALL):
            assert m.provenance.author_user_id != "alice" and m.subject_user_id != "alice", leak_message(guarantee, f"backend.list({key})", m.id, str(key), content=m.content, reproduce=contract.reproduce)
    assert (await contract.backend.get(ScopeKey.workspace("acme", "alpha"), bobs.memory_id)).content.startswith("Bob data")
    assert await bridge.audit_events(alice, action="forget_subject"), "forget_subject left no audit row"


# -- sharedBy from the request body (agentmemory 689) ---------------------------------------------
async def test_provenance_comes_from_the_authenticated_identity_only(contract: ContractEnv) -> None:
    """agentmemory #689: `sharedBy` taken from the request body allowed impersonation. Guarantee:
    provenance (author, injected_by, derived_from) comes from the identity, never from metadata."""
    ids, bridge = contract.ids, contract.bridge
    alice = await ids.login("alice", workspace="alpha")
    forged = {"author": "mallory", "author_user_id": "mallory", "author_agent_id": "evil", "injected_by": "mallory@evil",
              "derived_from": "m-123", "sharedBy": "mallory", "grant_id": "g-forged"}
    w = await bridge.remember(alice, "Decision: the alpha team deploys on Tuesdays", "decision", metadata=forged)
    result = await contract.recall(alice, "the alpha team deploys on Tuesdays", must_see=[w.memory_id], budget_tokens=BIG)
    (item,) = [i for i in result.items if i.memory_id == w.memory_id]
    guarantee = "provenance comes from the authenticated identity only"
    assert item.author == "alice@assistant", f"{guarantee}: author rendered as {item.author!r}"
    assert item.injected_by is None and item.derived_from == () and item.grant_id is None, f"{guarantee}: {item}"
    assert "mallory" not in result.context and "g-forged" not in result.context, f"{guarantee}: forged provenance rendered:\n{result.context}"
    stored = await contract.backend.get(ScopeKey.parse(w.scope), w.memory_id)
    assert (stored.provenance.author_user_id, stored.provenance.author_agent_id, stored.provenance.injected_by) == ("alice", "assistant", None)


# -- peer scope defaults to all (OpenViking) -------------------------------------------------------
async def test_agent_private_memory_invisible_to_other_agent_of_same_user_in_every_search_mode(contract: ContractEnv) -> None:
    """OpenViking: peer scope defaulted to "all". Guarantee: a memory private to one agent is not
    returned to another agent of the same user by any search mode (recall chat/coding, kinds
    filter, injection search, direct backend search)."""
    ids, bridge = contract.ids, contract.bridge
    coder = await ids.login("alice", agent="coder", workspace="alpha")
    assistant = await ids.login("alice", agent="assistant", workspace="alpha")
    text = "Agent-private procedure: deploy with make release TARGET=prod"
    secret = [await bridge.remember(coder, text, "procedure"), await bridge.remember(coder, text + " (experience)", "experience")]
    sentinel = await bridge.remember(assistant, "Assistant procedure: deploy answers with make release notes", "procedure")
    guarantee = "an agent-private memory is not returned to another agent of the same user by any search mode"
    for kwargs in ({}, {"purpose": "coding"}, {"kinds": ["procedure"]}, {"kinds": ["experience", "procedure"], "purpose": "coding"}):
        seen = await contract.recall(assistant, text, must_see=[sentinel.memory_id], budget_tokens=BIG, **kwargs)
        contract.assert_not_seen(seen, secret, guarantee=guarantee, reader=assistant)
    manifest = await bridge.inject(assistant, "researcher", text, depth="full")
    leaked = {mid for _, mid in manifest.entries} & {s.memory_id for s in secret}
    assert not leaked, leak_message(guarantee + " (injection search)", assistant, ",".join(leaked), "acme/agent/coder/alice", reproduce=contract.reproduce)
    child = await ids.login("alice", agent="researcher", workspace="alpha")
    seen = await contract.recall(child, text, manifest_id=manifest.manifest_id, budget_tokens=BIG)
    contract.assert_not_seen(seen, secret, guarantee=guarantee, reader=child)
    with pytest.raises(NotPermitted):
        await bridge.recall(assistant, text, include_scopes=["acme/agent/coder/alice"])
    for scope in (ScopeKey.agent("acme", "assistant", "alice"), ScopeKey.agent("acme", "coder", "bob")):
        hits = await search(contract, ScopeSet.of(scope), text, limit=50)
        assert not {h.memory.id for h in hits.hits} & {s.memory_id for s in secret}
    await contract.recall(coder, text, must_see=[s.memory_id for s in secret], budget_tokens=BIG)


# -- session id reuse (Viking Memory) --------------------------------------------------------------
async def test_two_identities_reusing_one_client_session_id_never_share_a_session(contract: ContractEnv) -> None:
    """Viking Memory: reusing a session id overwrote another session's events. Guarantee: two
    identities presenting the same client session id never share a session (the second is refused)."""
    ids, bridge = contract.ids, contract.bridge
    sid = "chat-42"
    alice = await ids.via_gateway("alice", session_id=sid)
    note = await bridge.remember(alice, "Alice session note: the draft is in folder Q3", "note")
    bob = await ids.via_gateway("bob", session_id=sid)
    for call in (lambda: bridge.recall(bob, "the draft is in folder Q3"), lambda: bridge.remember(bob, "Bob note", "note"),
                 lambda: bridge.capture(bob, [{"role": "user", "content": "I prefer the draft in folder Q4."}])):
        with pytest.raises(SessionIdentityMismatch):
            await call()
    other_agent = await ids.via_gateway("alice", agent="coder", session_id=sid)
    with pytest.raises(SessionIdentityMismatch):
        await bridge.recall(other_agent, "the draft")
    # Session ids are per tenant: the same id in another tenant is another session, and sees nothing of acme.
    globex = await ids.via_gateway("alice", tenant="globex", session_id=sid)
    own = await bridge.remember(globex, "Globex alice note: the draft is in folder Z", "note")
    seen = await contract.recall(globex, "Alice session note: the draft is in folder Q3", must_see=[own.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(seen, [note], guarantee="session ids never join tenants", reader=globex)


@pytest.mark.contract_own_bridge  # two bridges with their own session registries
async def test_two_identities_reusing_one_client_session_id_never_share_a_backend_session(contract: ContractEnv) -> None:
    """Viking Memory: session id reuse overwrote another user's session. Guarantee: with
    server-side extraction, two identities using the same client session id (even through two
    bridges with separate session registries) are mapped to different backend sessions."""
    from contract_tests.harness import require_capability

    require_capability(contract.backend, "server_side_extraction")
    ids = contract.ids
    b1 = contract.other_bridge("bridge-a", server_side_extraction=True)
    b2 = contract.other_bridge("bridge-b", server_side_extraction=True)
    sid = "chat-42"
    alice = await ids.via_gateway("alice", session_id=sid)
    bob = await ids.via_gateway("bob", session_id=sid)
    ra = await b1.capture(alice, [{"role": "user", "content": "I prefer green tea in the morning."}])
    rb = await b2.capture(bob, [{"role": "user", "content": "I prefer black coffee in the morning."}])
    assert ra.backend_session_id and rb.backend_session_id
    assert ra.backend_session_id != rb.backend_session_id, (
        f"GUARANTEE BROKEN: alice and bob with client session {sid!r} share backend session {ra.backend_session_id}. Reproduce: {contract.reproduce}"
    )
