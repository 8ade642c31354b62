"""Expiry and storage quotas (seed 000 §3 `expires_at`, §7 quotas).

Expiry: a memory past its `expires_at` — judged by the bridge's clock, which the bridge passes in
every `SearchQuery` — is never a candidate: not for any purpose or kind filter, not through a
manifest, not by `get` (NotFound) or `list`; the backend excludes it inside its own query, so a
`limit` is filled with live memories however many expired ones rank above them. The purge
deletes expired memories, one audit row `expired` each, and nothing that is still live.

Quotas: a write past a tenant's or a user's quota raises the typed `QuotaExceeded` and writes
nothing — a capture that would extract several memories fits entirely or writes none — and
forgetting or expiry gives the space back.

Every test uses a fake clock (`Clock`) on its own bridge over the suite's backend, so nothing
sleeps and the adapter sees exactly the `now` the bridge chose.
"""

from __future__ import annotations

import time

import pytest

from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.errors import BackendNotFound
from adapters.scopes import ScopeKey, ScopeSet
from bridge.errors import InvalidInput, NotFound, NotPermitted, QuotaExceeded
from bridge.policy.quotas import QuotaConfig, QuotaLimits
from contract_tests.harness import Clock, ContractEnv, eventually, fail_leak, scope_of

pytestmark = pytest.mark.asyncio
#: These tests move a clock of their own: under --via service they skip before a serve process starts.
OWN_BRIDGE = pytest.mark.contract_own_bridge

BIG = 20000
TOPIC = "Procurement Kafka consumer idempotency key rotation"


def _bridge(env: ContractEnv, name: str, **kwargs):
    clock = Clock()
    return env.other_bridge(name, clock=clock, **kwargs), clock


@OWN_BRIDGE
async def test_expired_memory_is_never_recalled_in_any_mode(contract: ContractEnv) -> None:
    """An expired memory is never a candidate: any purpose, any kind filter, through a manifest,
    by get (NotFound) or in a list — while a live sentinel written alongside still is."""
    bridge, clock = _bridge(contract, "expiry")
    alice = await contract.ids.login("alice", agent="assistant", workspace="alpha")
    doomed = await bridge.remember(alice, f"{TOPIC}: rotate keys every 30 days", "decision", ttl_s=60)
    live = await bridge.remember(alice, f"{TOPIC}: keys live in the vault", "decision")
    assert doomed.expires_at is not None and abs(doomed.expires_at - (clock.now + 60)) < 1e-3, doomed
    assert live.expires_at is None
    seen = await contract.recall(alice, TOPIC, bridge=bridge, must_see=[doomed.memory_id, live.memory_id], budget_tokens=BIG)
    (item,) = [i for i in seen.items if i.memory_id == doomed.memory_id]
    assert item.expires_at == doomed.expires_at, "a recalled memory shows when it expires"
    child = await contract.ids.login("alice", agent="researcher", workspace="alpha")
    manifest = await bridge.inject(alice, "researcher", "rotate the keys", memory_refs=[doomed.ref, live.ref])

    clock.advance(61)
    guarantee = "an expired memory is never a candidate of any search"
    for kwargs in ({"purpose": "chat"}, {"purpose": "coding"}, {"kinds": ["decision"]}):
        result = await contract.recall(alice, TOPIC, bridge=bridge, must_see=[live.memory_id], budget_tokens=BIG, **kwargs)
        contract.assert_not_seen(result, [doomed], guarantee=f"{guarantee} ({kwargs})", reader=alice)
        assert result.expired_dropped == 0 or not contract.capabilities.expiry_in_query, result
    through = await contract.recall(child, TOPIC, bridge=bridge, manifest_id=manifest.manifest_id, must_see=[live.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(through, [doomed], guarantee=f"{guarantee} (through a manifest)", reader=child)
    with pytest.raises(NotFound):
        await bridge.get_memory(alice, doomed.ref)
    assert (await bridge.get_memory(alice, live.ref)).memory_id == live.memory_id
    listed = await bridge.list_memories(alice, live.scope, limit=100)
    for record in listed.memories:
        if record.memory_id == doomed.memory_id:
            fail_leak(f"{guarantee} (list)", alice, record, reproduce=contract.reproduce)
    assert live.memory_id in {r.memory_id for r in listed.memories}


async def test_backend_excludes_expired_inside_its_query_and_fills_the_limit(contract: ContractEnv) -> None:
    """The adapter judges expiry at `SearchQuery.now` and excludes expired rows before it takes
    the top `limit`: five expired near-duplicates ranking first never crowd out the live one."""
    backend = contract.backend
    scope = ScopeKey.private("acme", "erin")
    now = time.time()
    author = Provenance(author_user_id="erin", author_agent_id="assistant")
    expired_ids = []
    for n in range(5):
        stored = await backend.put(scope, NewMemory(f"{TOPIC} {n}", "fact", author, expires_at=now + 10), idempotency_key=f"exp-{n}")
        expired_ids.append(stored.id)
        assert stored.expires_at == now + 10
    live = await backend.put(scope, NewMemory(f"{TOPIC} (still valid, different wording entirely)", "fact", author), idempotency_key="live")
    scopes = ScopeSet.of(scope)

    before = await eventually(
        lambda: backend.search(SearchQuery(scopes, TOPIC, limit=10, now=now)), lambda r: len(r.hits) == 6,
        timeout=contract.settle_timeout, describe="all six memories searchable before they expire",
    )
    assert {h.memory.id for h in before.hits} == {*expired_ids, live.id}
    after = await backend.search(SearchQuery(scopes, TOPIC, limit=1, now=now + 11))
    assert [h.memory.id for h in after.hits] == [live.id], (
        f"{backend.name}: with limit=1 at a time when five memories have expired, the search returned "
        f"{[h.memory.id for h in after.hits]}, not the one live memory {live.id}"
    )
    assert (await backend.get(scope, expired_ids[0])).expires_at == now + 10, "get returns the record with its expiry (the bridge judges it)"


@OWN_BRIDGE
async def test_purge_deletes_only_expired_memories_and_audits_each(contract: ContractEnv) -> None:
    """The purge deletes every expired memory of the tenant (and nothing live), one audit row
    `expired` per memory; members may not run it."""
    bridge, clock = _bridge(contract, "purge")
    admin = await contract.ids.login("root", roles=["admin"], workspace="alpha")
    bob = await contract.ids.login("bob", workspace="alpha")
    a = await bridge.remember(bob, f"{TOPIC}: temporary override A", "fact", ttl_s=30)
    b = await bridge.remember(bob, f"{TOPIC}: temporary override B", "decision", visibility="workspace", ttl_s=30)
    keep = await bridge.remember(bob, f"{TOPIC}: permanent rule", "fact")
    later = await bridge.remember(bob, f"{TOPIC}: expires next week", "fact", ttl_s=7 * 86400)
    await contract.recall(bob, TOPIC, bridge=bridge, must_see=[a.memory_id, b.memory_id, keep.memory_id, later.memory_id], budget_tokens=BIG)
    clock.advance(31)
    with pytest.raises(NotPermitted):
        await bridge.purge_expired(bob)

    report = await bridge.purge_expired(admin)
    assert report.complete and set(report.memory_ids) == {a.memory_id, b.memory_id}, report
    for gone in (a, b):
        with pytest.raises(BackendNotFound):
            await contract.backend.get(scope_of(gone), gone.memory_id)
    for kept in (keep, later):
        assert (await contract.backend.get(scope_of(kept), kept.memory_id)).id == kept.memory_id
    rows = await bridge.audit_events(admin, action="expired", limit=10)
    assert sorted(m for r in rows for m in r.memory_ids) == sorted([a.memory_id, b.memory_id]), rows
    assert all(len(r.memory_ids) == 1 and r.actor == admin.principal for r in rows)
    again = await bridge.purge_expired(admin)
    assert again.purged == 0 and again.complete


@OWN_BRIDGE
async def test_purge_reports_progress_and_stops_at_its_batch(contract: ContractEnv) -> None:
    """A long purge is a loop of bounded runs: each says how far it got; the last is complete."""
    bridge, clock = _bridge(contract, "purge-batches")
    admin = await contract.ids.login("root", roles=["admin"])
    written = [await bridge.remember(admin, f"{TOPIC}: short-lived note {n}", "fact", ttl_s=5) for n in range(3)]
    await contract.recall(admin, TOPIC, bridge=bridge, must_see=[w.memory_id for w in written], budget_tokens=BIG)
    clock.advance(6)
    first = await bridge.purge_expired(admin, max_deletions=2)
    assert first.purged == 2 and not first.complete, first
    second = await bridge.purge_expired(admin, max_deletions=2)
    assert second.purged == 1 and second.complete, second


@OWN_BRIDGE
async def test_expiry_in_the_past_or_both_forms_is_invalid_input(contract: ContractEnv) -> None:
    """`expires_at` must lie in the future (the bridge's clock) and within the maximum TTL; a
    write giving both forms, a negative TTL or a non-number is `InvalidInput` and writes nothing."""
    bridge, clock = _bridge(contract, "expiry-input")
    carol = await contract.ids.login("carol")
    for kwargs in ({"expires_at": clock.now - 1}, {"expires_at": clock.now + 20 * 365 * 86400}, {"ttl_s": -5}, {"ttl_s": 0},
                   {"ttl_s": "60"}, {"expires_at": clock.now + 60, "ttl_s": 60}, {"ttl_s": float("nan")}):
        with pytest.raises(InvalidInput):
            await bridge.remember(carol, f"{TOPIC}: never stored", "fact", **kwargs)
    assert await contract.backend.list(ScopeKey.private("acme", "carol")) == []


@OWN_BRIDGE
async def test_quota_refusal_writes_nothing_and_is_typed(contract: ContractEnv) -> None:
    """A user at their quota gets `QuotaExceeded` (a Conflict) and nothing is written; a capture
    that would extract more memories than fit writes none of them; forgetting frees the space."""
    bridge, _ = _bridge(contract, "quota", quotas=QuotaConfig(user=QuotaLimits(max_memories=2)))
    dave = await contract.ids.login("dave")
    first = await bridge.remember(dave, f"{TOPIC}: first", "fact")
    await bridge.remember(dave, f"{TOPIC}: second", "fact")
    with pytest.raises(QuotaExceeded) as refused:
        await bridge.remember(dave, f"{TOPIC}: third", "fact")
    assert (refused.value.level, refused.value.measure, refused.value.used, refused.value.limit) == ("user", "memories", 2, 2)
    scope = ScopeKey.private("acme", "dave")
    assert len(await contract.backend.list(scope)) == 2, "a refused write left a memory behind"
    assert not [r for r in await bridge.audit_events(dave, action="write", limit=10) if "third" in str(r.detail)]

    assert await bridge.forget(dave, first.ref)
    messages = [{"role": "user", "content": "I prefer green tea in the morning."}, {"role": "user", "content": "I prefer window seats on flights."}]
    before = {m.id for m in await contract.backend.list(scope)}
    with pytest.raises(QuotaExceeded):  # two memories would be extracted; one slot is free
        await bridge.capture(dave, messages)
    assert {m.id for m in await contract.backend.list(scope)} == before, "a capture over the quota wrote part of itself"
    fits = await bridge.remember(dave, f"{TOPIC}: fits again", "fact")
    assert fits.memory_id


@OWN_BRIDGE
async def test_tenant_byte_quota_counts_every_user_and_expiry_gives_it_back(contract: ContractEnv) -> None:
    """The tenant's byte quota is shared by its users; another tenant is not affected; purging
    expired memories frees their bytes."""
    content = f"{TOPIC}: " + "x" * 60  # ~112 bytes
    size = len(content.encode())
    bridge, clock = _bridge(contract, "tenant-quota", quotas=QuotaConfig(tenant=QuotaLimits(max_bytes=2 * size + 10)))
    admin = await contract.ids.login("root", roles=["admin"])
    u1, u2 = await contract.ids.login("u1"), await contract.ids.login("u2")
    other = await contract.ids.login("u1", tenant="globex")
    await bridge.remember(u1, content, "fact", ttl_s=10)
    await bridge.remember(u2, content + "y", "fact")
    with pytest.raises(QuotaExceeded) as refused:
        await bridge.remember(u1, content + "z", "fact")
    assert refused.value.level == "tenant" and refused.value.measure == "bytes"
    await bridge.remember(other, content, "fact")  # globex has its own quota
    clock.advance(11)
    assert (await bridge.purge_expired(admin)).purged == 1
    await bridge.remember(u1, content + "z", "fact")


@OWN_BRIDGE
async def test_an_expired_memory_cannot_be_injected(contract: ContractEnv) -> None:
    """A parent cannot hand a child a memory that has expired, by reference or by search."""
    from bridge.errors import NotFound

    bridge, clock = _bridge(contract, "expiry-inject")
    parent = await contract.ids.login("alice", agent="assistant", workspace="alpha")
    doomed = await bridge.remember(parent, f"{TOPIC}: temporary procedure", "procedure", ttl_s=10)
    live = await bridge.remember(parent, f"{TOPIC}: lasting procedure", "procedure")
    await contract.recall(parent, TOPIC, bridge=bridge, must_see=[doomed.memory_id, live.memory_id], budget_tokens=BIG)
    clock.advance(11)
    with pytest.raises(NotFound, match="expired"):  # gone, as a forgotten memory is (the live view, adapters/live.py)
        await bridge.inject(parent, "researcher", "rotate", memory_refs=[doomed.ref])
    manifest = await bridge.inject(parent, "researcher", TOPIC, depth="full")
    assert doomed.memory_id not in manifest.memory_ids and live.memory_id in manifest.memory_ids, manifest.memory_ids
