"""The admin console's operations at the library level: tenant admins only, their own
tenant only, and "who can read this" agrees with the policy identity by identity."""

from __future__ import annotations

import itertools
import time

import pytest

from adapters.base import Status
from adapters.scopes import ScopeKey
from bridge.operations.admin import ScopeCounts, TenantGrants, TenantManifests, WhoCanRead
from bridge.errors import NotFound, NotPermitted
from bridge.operations.sharing import SetTeamMembers, SetVisibleTo
from bridge.policy import Policy, PolicyConfig
from bridge.policy.reads import default_audience, readers_of
from bridge.state.records import Grant, InjectDepth, InjectionManifest
from tests.kit import make_identity

ADMIN = make_identity("root", roles=["admin"])
OTHER_ADMIN = make_identity("boss", tenant="globex", roles=["admin"])
MEMBER = make_identity("alice")


async def test_member_cannot_use_any_tenant_admin_view(bridge) -> None:  # type: ignore[no-untyped-def]
    w = await bridge.remember(MEMBER, "we ship on fridays", "decision")
    for op in (TenantGrants(), TenantManifests(), ScopeCounts(), WhoCanRead(ref=(w.scope, w.memory_id))):
        with pytest.raises(NotPermitted):
            await bridge.execute(MEMBER, op)
    rows = await bridge.audit_events(ADMIN, action="denied")
    assert {r.detail["operation"] for r in rows} >= {"tenant_grants", "tenant_manifests", "scope_counts", "who_can_read"}


async def test_admin_of_another_tenant_sees_nothing_of_this_one(bridge) -> None:  # type: ignore[no-untyped-def]
    w = await bridge.remember(MEMBER, "acme secret roadmap", "decision")
    await bridge.grant(ADMIN, "alice", "acme/dept/sales", ttl_seconds=600, reason="audit")
    await bridge.inject(MEMBER, "helper", "task", memory_refs=[(w.scope, w.memory_id)])
    assert await bridge.execute(OTHER_ADMIN, TenantGrants(include_inactive=True)) == []
    assert await bridge.execute(OTHER_ADMIN, TenantManifests()) == []
    assert all(c.scope.startswith("globex/") for c in await bridge.execute(OTHER_ADMIN, ScopeCounts()))
    with pytest.raises(NotPermitted):  # refused before the lookup: no existence oracle
        await bridge.execute(OTHER_ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    with pytest.raises(NotPermitted):
        await bridge.execute(OTHER_ADMIN, WhoCanRead(ref=(w.scope, "no-such-id")))


async def test_admin_sees_grants_manifests_and_counts_of_the_tenant(bridge) -> None:  # type: ignore[no-untyped-def]
    w = await bridge.remember(MEMBER, "we deploy with blue-green", "decision")
    await bridge.remember(make_identity("dana", departments=["eng"]), "review every PR", "standard")
    g = await bridge.grant(ADMIN, "alice", "acme/dept/sales", ttl_seconds=600, reason="quarterly audit")
    gone = await bridge.grant(ADMIN, "bob", "acme/dept/sales", ttl_seconds=600, reason="temporary")
    await bridge.revoke_grant(ADMIN, gone.grant_id)
    m = await bridge.inject(MEMBER, "helper", "summarise deploys", memory_refs=[(w.scope, w.memory_id)])
    assert [x.grant_id for x in await bridge.execute(ADMIN, TenantGrants())] == [g.grant_id]
    assert {x.grant_id for x in await bridge.execute(ADMIN, TenantGrants(include_inactive=True))} == {g.grant_id, gone.grant_id}
    manifests = await bridge.execute(ADMIN, TenantManifests())
    assert [(x.manifest_id, x.memory_ids, x.chain_live) for x in manifests] == [(m.manifest_id, (w.memory_id,), True)]
    counts = {c.scope: c for c in await bridge.execute(ADMIN, ScopeCounts())}
    assert counts["acme/ws/alpha"].active == 1 and counts["acme/dept/eng"].pending == 1


async def test_who_can_read_names_the_audience_the_grants_and_the_manifests(bridge) -> None:  # type: ignore[no-untyped-def]
    w = await bridge.remember(MEMBER, "the sales forecast", "standard", department_id="eng")
    assert w.status == "pending"
    pending = await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    assert pending.status == "pending" and {r.via for r in pending.readers} == {"author", "approval queue", "admin"}
    await bridge.approve(ADMIN, (w.scope, w.memory_id))
    g = await bridge.grant(ADMIN, "bob", "acme/dept/eng", ttl_seconds=600, reason="cross-team review", grantee_agent_id="reviewer")
    m = await bridge.inject(MEMBER, "helper", "prepare the forecast", memory_refs=[(w.scope, w.memory_id)])
    report = await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    by_via = {r.via: r for r in report.readers}
    assert "department eng" in by_via["default scope"].who
    assert by_via["grant"].ref == g.grant_id and "bob" in by_via["grant"].who and "reviewer" in by_via["grant"].who
    assert by_via["manifest"].ref == m.manifest_id and "helper" in by_via["manifest"].who
    assert "another tenant" in report.never and report.complete
    looked = await bridge.audit_events(ADMIN, action="inspect", memory_id=w.memory_id)
    assert any(r.detail.get("operation") == "who_can_read" and r.actor == ADMIN.principal for r in looked)
    await bridge.revoke_manifest(MEMBER, m.manifest_id)
    await bridge.revoke_grant(ADMIN, g.grant_id)
    after = await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    assert {r.via for r in after.readers} == {"default scope", "admin"}
    with pytest.raises(NotFound):
        await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, "no-such-memory")))


def test_default_audience_agrees_with_the_policy_identity_by_identity() -> None:
    """`readers_of` describes audiences; `Policy.own_scopes` decides reads. For every scope kind
    and a grid of identities, the audience matches exactly the identities the policy lets read."""
    for include_global in (True, False):
        policy = Policy(PolicyConfig(include_global=include_global))
        keys = [
            ScopeKey.private("acme", "alice"), ScopeKey.agent("acme", "coder", "alice"), ScopeKey.workspace("acme", "alpha"),
            ScopeKey.department("acme", "eng"), ScopeKey.tenant("acme"), ScopeKey.global_(),
            ScopeKey.task("acme", "coder", "alice", "t1"), ScopeKey.team("acme", "red"),
        ]
        grid = [
            make_identity(user, tenant=tenant, agent=agent, departments=depts, workspace=ws).model_copy(update={"task_id": task})
            for tenant, user, agent, depts, ws, task in itertools.product(
                ("acme", "globex"), ("alice", "bob"), ("coder", "assistant"), ((), ("eng",), ("eng", "ops")), (None, "alpha", "beta"), (None, "t1", "t2"),
            )
        ]
        for key in keys:
            audience = default_audience(policy, key)
            for who in grid:
                expected = policy.reads_by_default(who, key)
                assert (audience is not None and audience.matches(who)) == expected, (key, who.principal, who.workspace_id, who.department_ids)


def test_dead_or_foreign_sources_never_count_as_readers() -> None:
    policy, now = Policy(), time.time()
    key = ScopeKey.workspace("acme", "alpha")
    grants = [
        Grant("g-expired", "acme", "bob", None, key, "root", "old", now - 100, now - 1),
        Grant("g-revoked", "acme", "bob", None, key, "root", "revoked", now - 100, now + 100, revoked_at=now - 5),
        Grant("g-other-scope", "acme", "bob", None, ScopeKey.workspace("acme", "beta"), "root", "elsewhere", now, now + 100),
    ]
    source = InjectionManifest("m0", "acme", "alice", "brain", "helper", "t", InjectDepth.MINIMAL, ((key, "m1"),), True, now - 10, now - 1)
    child = InjectionManifest("m1", "acme", "alice", "helper", "sub", "t", InjectDepth.MINIMAL, ((key, "m1"),), False, now - 5, now + 100, parent_manifest_id="m0")
    orphan = InjectionManifest("m2", "acme", "alice", "helper", "sub2", "t", InjectDepth.MINIMAL, ((key, "m1"),), False, now - 5, now + 100, parent_manifest_id="gone")
    readers = readers_of(policy, key, Status.ACTIVE, "alice", grants, [(child, [source]), (orphan, [])], now)
    assert {r.via for r in readers} == {"default scope", "admin"}


async def test_who_can_read_names_the_agents_a_memory_is_shared_with_and_a_teams_members(bridge) -> None:  # type: ignore[no-untyped-def]
    coder = make_identity("alice", agent="coder")
    w = await bridge.remember(coder, "the flaky test is test_payments_retry", "experience")
    assert w.scope == "acme/agent/coder/alice"
    before = await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    assert {r.via for r in before.readers} == {"default scope", "admin"} and "agent coder" in before.readers[0].who
    await bridge.execute(coder, SetVisibleTo(ref=(w.scope, w.memory_id), visible_to=("reviewer",)))
    shared = await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    assert [r.who for r in shared.readers if r.via == "share"] == ["agent reviewer acting for user alice"]
    await bridge.execute(ADMIN, SetTeamMembers(team_id="red", agent_ids=("coder", "tester")))
    t = await bridge.remember(coder, "red team decision: freeze on thursday", "decision", visibility="team")
    team = await bridge.execute(ADMIN, WhoCanRead(ref=(t.scope, t.memory_id)))
    readers = {r.via: r.who for r in team.readers}
    assert "default scope" not in readers and "coder, tester" in readers["team"]
