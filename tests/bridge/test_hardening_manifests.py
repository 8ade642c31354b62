"""Manifest revocation cascades, and manifests stay bounded (a manifest that outlives its source
would keep granting reads nobody may give any more; unbounded manifests are a denial of service).

A re-injection (`may_reinject`) creates a grand-child manifest that must end with its
source — revoked, expired or erased — and the original issuer and tenant admins can revoke the
whole chain. Expired and revoked manifests are purged as new ones are made, a user's
agents hold at most `Limits.max_active_manifests_per_user` live manifests, and `forget` touches
only the manifests that hold the forgotten id (the `manifest_entries` index, not a JSON scan).
"""

from __future__ import annotations

import re

import pytest

from adapters.scopes import ScopeKey
from bridge import ManifestError, MemoryBridge, NotPermitted
from bridge.operations.limits import Limits
from bridge.policy import Policy
from bridge.recall.scopes import load_manifest_for
from bridge.state.records import InjectDepth, InjectionManifest
from tests.kit import make_identity

TEXT = "plan: split the migration into three steps"
PARENT, CHILD, GRANDCHILD = (make_identity(agent=a) for a in ("orchestrator", "worker", "tester"))


class FakeClock:
    def __init__(self, now: float = 1_900_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def clocked(tmp_path):
    clock = FakeClock()
    b = MemoryBridge.open_local(tmp_path / "home", clock=clock)
    yield b, clock
    await b.aclose()


async def _chain(b: MemoryBridge, **source_kwargs):
    """orchestrator -> worker (may_reinject) -> tester: the source and the derived manifest."""
    m = await b.remember(PARENT, TEXT, "note", visibility="agent")
    source = await b.inject(PARENT, "worker", "migration", memory_refs=[m.ref], may_reinject=True, **source_kwargs)
    derived = await b.inject(CHILD, "tester", "check the migration", memory_refs=[m.ref], from_manifest_id=source.manifest_id)
    assert derived.parent_manifest_id == source.manifest_id
    seen = await b.recall(GRANDCHILD, TEXT, manifest_id=derived.manifest_id)
    assert m.memory_id in {i.memory_id for i in seen.items}, "positive control: the grand-child sees the re-injected memory"
    return m, source, derived


async def _assert_ended(b: MemoryBridge, manifest_id: str, why: str) -> None:
    before = await b.backend.list(ScopeKey.private("acme", "alice"))
    with pytest.raises(ManifestError):
        await b.recall(GRANDCHILD, TEXT, manifest_id=manifest_id)
    with pytest.raises(ManifestError):
        await b.write_back(GRANDCHILD, manifest_id, "Result: step two is reversible", "fact")
    assert await b.backend.list(ScopeKey.private("acme", "alice")) == before, f"a write-back through a manifest ended by {why} was stored"


async def test_revoking_a_manifest_ends_every_manifest_derived_from_it(clocked):
    b, _ = clocked
    _, source, derived = await _chain(b)
    await b.revoke_manifest(PARENT, source.manifest_id)
    await _assert_ended(b, derived.manifest_id, "revoking its source")
    row = (await b.audit_events(PARENT, action="revoke"))[0]
    assert row.detail["ended"] == 2, f"revocation should end the source and its derived manifest, audit says {row.detail}"


async def test_original_issuer_can_revoke_a_grandchild_manifest_directly(clocked):
    b, _ = clocked
    m, source, derived = await _chain(b)
    for stranger in (make_identity(agent="other"), make_identity("bob", agent="orchestrator"), make_identity(agent="orchestrator", tenant="globex")):
        with pytest.raises(ManifestError):
            await b.revoke_manifest(stranger, derived.manifest_id)
    await b.recall(GRANDCHILD, TEXT, manifest_id=derived.manifest_id)  # strangers changed nothing
    await b.revoke_manifest(PARENT, derived.manifest_id)
    await _assert_ended(b, derived.manifest_id, "the original issuer")
    seen = await b.recall(CHILD, TEXT, manifest_id=source.manifest_id)  # revocation runs down the tree, never up
    assert m.memory_id in {i.memory_id for i in seen.items}


async def test_tenant_admin_can_revoke_any_manifest_of_the_tenant(clocked):
    b, _ = clocked
    _, source, derived = await _chain(b)
    with pytest.raises(ManifestError):
        await b.revoke_manifest(make_identity("boss", tenant="globex", roles=("admin",)), source.manifest_id)
    await b.revoke_manifest(make_identity("dave", roles=("admin",), workspace=None), source.manifest_id)
    await _assert_ended(b, derived.manifest_id, "a tenant admin revoking its source")


async def test_expiry_of_the_source_ends_the_derived_manifest(clocked):
    b, clock = clocked
    _, source, derived = await _chain(b, ttl_seconds=60)
    assert derived.expires_at <= source.expires_at
    clock.now = source.expires_at + 1
    await _assert_ended(b, derived.manifest_id, "the expiry of its source")


def test_policy_refuses_a_derived_manifest_whose_source_expired_even_if_it_has_not():
    """The chain check itself, independent of the expiry cap at creation: a derived manifest
    is only as alive as every manifest above it."""
    scope = ScopeKey.agent("acme", "orchestrator", "alice")

    def manifest(mid: str, issuer: str, child: str, expires: float, parent: str | None = None, revoked: float | None = None) -> InjectionManifest:
        return InjectionManifest(mid, "acme", "alice", issuer, child, "t", InjectDepth.STANDARD, ((scope, "m1"),), parent is None, 0.0, expires, parent, revoked)

    source = manifest("src", "orchestrator", "worker", expires=100.0)
    derived = manifest("drv", "worker", "tester", expires=1000.0, parent="src")
    policy = Policy()
    policy.check_manifest_use(GRANDCHILD, derived, [source], now=50.0)  # alive while the source is
    with pytest.raises(ManifestError, match="src"):
        policy.check_manifest_use(GRANDCHILD, derived, [source], now=150.0)
    with pytest.raises(ManifestError, match="revoked"):
        policy.check_manifest_use(GRANDCHILD, derived, [manifest("src", "orchestrator", "worker", 1000.0, revoked=10.0)], now=50.0)
    with pytest.raises(ManifestError, match="no longer exists"):  # a purged source ends it too
        policy.check_manifest_use(GRANDCHILD, derived, [], now=50.0)


async def test_erased_users_manifests_are_gone(clocked):
    b, _ = clocked
    _, source, derived = await _chain(b)
    await b.forget_subject(make_identity("dave", roles=("admin",), workspace=None), "alice")
    for manifest_id, child in ((source.manifest_id, CHILD), (derived.manifest_id, GRANDCHILD)):
        assert await b.state.manifests.get(manifest_id) is None, f"manifest {manifest_id} of the erased user survived"
        with pytest.raises(ManifestError, match="no injection manifest"):
            await load_manifest_for(b.runtime, child, manifest_id)


# -- bounded manifests ------------------------------------------------------------------------


def _entry_rows(b: MemoryBridge, where: str = "", params: tuple = ()) -> int:
    return b.state.db.query(f"SELECT COUNT(*) FROM manifest_entries {where}", params)[0][0]


async def test_expired_and_revoked_manifests_are_purged_as_new_ones_are_made(clocked):
    b, clock = clocked
    m = await b.remember(PARENT, TEXT, "note", visibility="agent")
    expiring = await b.inject(PARENT, "worker", "short task", memory_refs=[m.ref], ttl_seconds=10)
    revoked = await b.inject(PARENT, "worker", "cancelled task", memory_refs=[m.ref])
    await b.revoke_manifest(PARENT, revoked.manifest_id)
    clock.now += 11
    fresh = await b.inject(PARENT, "worker", "next task", memory_refs=[m.ref])
    for dead in (expiring, revoked):
        assert await b.state.manifests.get(dead.manifest_id) is None, f"manifest {dead.manifest_id} was not purged"
        assert _entry_rows(b, "WHERE manifest_id = ?", (dead.manifest_id,)) == 0
    assert (await b.state.manifests.get(fresh.manifest_id)) is not None
    assert b.state.db.query("SELECT COUNT(*) FROM manifests")[0][0] == 1


async def test_a_user_cannot_hold_more_live_manifests_than_the_cap(tmp_path):
    b = MemoryBridge.open_local(tmp_path / "home", limits=Limits(max_active_manifests_per_user=2))
    try:
        m = await b.remember(PARENT, TEXT, "note", visibility="agent")
        first = await b.inject(PARENT, "worker", "task 1", memory_refs=[m.ref])
        await b.inject(make_identity(agent="planner"), "worker", "task 2", memory_refs=[(ScopeKey.private("acme", "alice"), (await b.remember(PARENT, "x note", "note")).memory_id)])
        with pytest.raises(NotPermitted, match="live manifests"):  # the cap is per user, across their agents
            await b.inject(PARENT, "worker", "task 3", memory_refs=[m.ref])
        denied = await b.state.audit.query(b.policy.audit_view(make_identity("dave", roles=("admin",))), action="denied")
        assert any(r.detail["operation"] == "inject" for r in denied), "the capped injection left no denied audit row"
        other_user = await b.remember(make_identity("bob", agent="orchestrator"), "bob's plan", "note", visibility="agent")
        await b.inject(make_identity("bob", agent="orchestrator"), "worker", "bob's task", memory_refs=[other_user.ref])
        await b.revoke_manifest(PARENT, first.manifest_id)
        await b.inject(PARENT, "worker", "task 3", memory_refs=[m.ref])  # room again
    finally:
        await b.aclose()


async def test_forget_purges_only_the_manifests_that_hold_the_id(bridge):
    """The purge goes through the manifest_entries index: it changes exactly the manifests that
    hold the forgotten id, and no statement it runs scans a manifest table."""
    forgotten = await bridge.remember(PARENT, "the forgotten plan", "note", visibility="agent")
    kept = await bridge.remember(PARENT, "the kept plan", "note", visibility="agent")
    holder = await bridge.inject(PARENT, "worker", "both", memory_refs=[forgotten.ref, kept.ref])
    unrelated = [await bridge.inject(PARENT, "worker", f"other {n}", memory_refs=[kept.ref]) for n in range(30)]
    assert _entry_rows(bridge, "WHERE memory_id = ?", (forgotten.memory_id,)) == 1
    total_before = _entry_rows(bridge)

    statements: list[str] = []
    conn = bridge.state.db.conn
    conn.set_trace_callback(statements.append)
    try:
        assert await bridge.forget(PARENT, forgotten.ref)
    finally:
        conn.set_trace_callback(None)

    assert _entry_rows(bridge, "WHERE memory_id = ?", (forgotten.memory_id,)) == 0
    assert _entry_rows(bridge) == total_before - 1, "forget removed manifest entries other than the forgotten id's"
    assert (await bridge.state.manifests.get(holder.manifest_id)).memory_ids == (kept.memory_id,)
    for m in unrelated:
        assert (await bridge.state.manifests.get(m.manifest_id)) == m, f"unrelated manifest {m.manifest_id} changed"
    touching = [s for s in statements if "manifest" in s.lower()]
    assert touching, "forget did not purge manifests at all"
    for sql in touching:
        plan = " | ".join(row[-1] for row in bridge.state.db.query(f"EXPLAIN QUERY PLAN {sql}"))
        assert not re.search(r"\bSCAN (TABLE )?manifest", plan), f"the purge scans a manifest table: {sql!r} -> {plan}"


async def test_another_tenants_manifest_id_is_answered_like_a_made_up_one(clocked):
    """Telling "not issued to you" apart from "no such manifest" confirms that an id exists."""
    b, _ = clocked
    _, source, _ = await _chain(b)
    outsider = make_identity("alice", tenant="globex", agent=CHILD.agent_id)
    other_user = make_identity("mallory", agent=CHILD.agent_id)
    answers = []
    for who, manifest_id in ((outsider, source.manifest_id), (other_user, source.manifest_id), (outsider, "m-made-up-0001")):
        with pytest.raises(ManifestError) as caught:
            await b.recall(who, "anything", manifest_id=manifest_id)
        answers.append(str(caught.value).replace(manifest_id, "<id>"))
    assert len(set(answers)) == 1, answers
