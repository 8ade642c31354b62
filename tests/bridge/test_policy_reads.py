"""The read-API rules beside recall (bridge/policy/reads.py), each at its edges: what an export
walks and keeps, the console's tenant-admin views, who reads a memory and why, and the default
scopes of a scope-less read. Pure functions of identities and records; no store, no door."""

from __future__ import annotations

import pytest

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.policy import Policy, PolicyConfig
from bridge.policy.reads import (
    Audience, default_audience, default_read_scopes, export_scopes, exports, may_edit, may_inspect, may_purge_expired,
    readers_of, require_tenant_admin,
)
from bridge.state.records import Grant, InjectDepth, InjectionManifest
from tests.kit import make_identity

policy = Policy()
ALICE = make_identity("alice", workspace="alpha", departments=("eng",))
ADMIN = make_identity("root", roles=["admin"])
ALPHA, BETA = ScopeKey.workspace("acme", "alpha"), ScopeKey.workspace("acme", "beta")
MINE, MY_AGENT = ScopeKey.private("acme", "alice"), ScopeKey.agent("acme", "assistant", "alice")
ELSEWHERE = ScopeKey.workspace("globex", "alpha")


# -- export -------------------------------------------------------------------------------------
def test_an_admin_exports_every_scope_of_their_tenant_and_nothing_else():
    tenant_scopes = [ALPHA, BETA, MINE, ELSEWHERE, ScopeKey.global_(), ALPHA]
    assert export_scopes(policy, ADMIN, tenant_scopes) == sorted([ALPHA, BETA, MINE], key=str)


def test_a_member_exports_their_default_scopes_of_the_tenant_but_never_global():
    walked = export_scopes(policy, ALICE, [BETA, ELSEWHERE])
    assert walked == [k for k, _ in policy.own_scopes(ALICE) if k.visibility is not Visibility.GLOBAL]
    assert BETA not in walked and ScopeKey.global_() not in walked and ALPHA in walked


def test_an_export_keeps_own_places_whole_and_shared_places_by_authorship_or_subject():
    assert exports(ALICE, MINE, Status.ACTIVE, "someone", None)
    assert exports(ALICE, MY_AGENT, Status.PENDING, "someone", None)
    assert exports(ALICE, ALPHA, Status.ACTIVE, "alice", None), "what they wrote"
    assert exports(ALICE, ALPHA, Status.ACTIVE, "bob", "alice"), "what is about them"
    assert not exports(ALICE, ALPHA, Status.ACTIVE, "bob", "carol")
    assert not exports(ALICE, ALPHA, Status.ACTIVE, "bob", None)
    assert not exports(ALICE, ScopeKey.agent("acme", "coder", "alice"), Status.ACTIVE, "bob", None), "another agent's place is not whole"


def test_an_export_never_keeps_forgotten_memories_nor_another_tenants():
    assert not exports(ALICE, MINE, Status.FORGOTTEN, "alice", "alice")
    assert not exports(ADMIN, ALPHA, Status.FORGOTTEN, "root", None)
    assert not exports(ADMIN, ELSEWHERE, Status.ACTIVE, "root", None)
    assert not exports(make_identity("alice", tenant="globex"), MINE, Status.ACTIVE, "alice", None)
    assert exports(ADMIN, BETA, Status.SUPERSEDED, "bob", None), "an admin's export keeps the tenant's memories whole"


# -- the console --------------------------------------------------------------------------------
def test_the_consoles_tenant_views_and_the_expiry_purge_are_for_admins():
    require_tenant_admin(ADMIN, "listing every grant")
    may_purge_expired(ADMIN)
    with pytest.raises(NotPermitted, match="admin"):
        require_tenant_admin(ALICE, "listing every grant")
    with pytest.raises(NotPermitted, match="purging"):
        may_purge_expired(ALICE)


def test_an_admin_inspects_their_tenants_memories_and_global_ones_only():
    may_inspect(ADMIN, BETA)
    may_inspect(ADMIN, ScopeKey.global_())
    with pytest.raises(NotPermitted, match="not a scope of tenant acme"):
        may_inspect(ADMIN, ELSEWHERE)
    with pytest.raises(NotPermitted, match="admin"):
        may_inspect(ALICE, ALPHA)


# -- who reads what, by default -----------------------------------------------------------------
@pytest.mark.parametrize("key", [
    MINE, MY_AGENT, ScopeKey.task("acme", "assistant", "alice", "t1"), ALPHA, ScopeKey.department("acme", "eng"),
    ScopeKey.tenant("acme"), ScopeKey.global_(),
])
def test_the_default_audience_is_exactly_who_reads_the_scope_by_default(key):
    audience = default_audience(policy, key)
    assert audience is not None
    people = [
        ALICE, ALICE.model_copy(update={"task_id": "t1"}), ALICE.model_copy(update={"task_id": "t2"}), make_identity("alice", agent="coder"),
        make_identity("bob"), make_identity("bob", workspace="beta", departments=("ops",)), make_identity("alice", tenant="globex"),
    ]
    for who in people:
        assert audience.matches(who) == (key in {k for k, _ in policy.own_scopes(who)}), (key, who.principal, who.task_id)


def test_nobody_reads_a_team_or_global_memory_by_default_when_global_is_off():
    assert default_audience(policy, ScopeKey.team("acme", "pilgrims")) is None
    assert default_audience(Policy(PolicyConfig(include_global=False)), ScopeKey.global_()) is None


def test_a_visibility_without_a_reader_rule_fails_closed():
    """A scope of a visibility this rule does not know (one added later) names nobody, never everyone."""
    from types import SimpleNamespace

    unknown = SimpleNamespace(visibility=SimpleNamespace(value="galaxy"), tenant_id="acme", owner_id="x", user_id=None, task_id=None)
    with pytest.raises(NotPermitted, match="no reader rule is known for visibility 'galaxy'"):
        default_audience(policy, unknown)  # type: ignore[arg-type]


def test_an_audience_describes_who_it_is():
    assert Audience(None).describe() == "every identity of every tenant"
    assert Audience("acme").describe() == "every identity of tenant acme"
    assert Audience("acme", user_id="alice", agent_id="coder", task_id="t1").describe() == "user alice acting through agent coder working on task t1 of tenant acme"
    assert Audience("acme", workspace_id="alpha").describe() == "every identity whose session is in workspace alpha of tenant acme"
    assert Audience("acme", department_id="eng").describe() == "every identity who belongs to department eng of tenant acme"


def _grant(gid: str, scope: ScopeKey, *, tenant: str = "acme", expires_at: float = 100.0, revoked_at: float | None = None, agent: str | None = None) -> Grant:
    return Grant(gid, tenant, "bob", agent, scope, "acme/root@assistant", "audit", 0.0, expires_at, revoked_at)


def _manifest(mid: str, parent: str | None = None, expires_at: float = 100.0, revoked_at: float | None = None) -> InjectionManifest:
    return InjectionManifest(mid, "acme", "alice", "brain", "child", "task", InjectDepth.MINIMAL, ((ALPHA, "m1"),), False, 0.0, expires_at, parent, revoked_at)


def test_readers_of_an_active_memory_are_its_audience_its_live_grants_and_its_live_manifests():
    grants = [
        _grant("live", ALPHA, agent="coder"), _grant("other-scope", BETA), _grant("expired", ALPHA, expires_at=10.0),
        _grant("revoked", ALPHA, revoked_at=5.0), _grant("other-tenant", ALPHA, tenant="globex"), _grant("plain", ALPHA),
    ]
    root, leaf = _manifest("root", expires_at=80.0), _manifest("leaf", parent="root")
    manifests = [(leaf, (root,)), (_manifest("orphan", parent="gone"), ()), (_manifest("dead", expires_at=20.0), ()),
                 (_manifest("revoked", revoked_at=1.0), ()), (_manifest("alone"), ())]
    readers = readers_of(policy, ALPHA, Status.ACTIVE, "alice", grants, manifests, 50.0)
    vias = [(r.via, r.ref) for r in readers]
    assert vias == [("default scope", None), ("grant", "live"), ("grant", "plain"), ("manifest", "leaf"), ("manifest", "alone"), ("admin", None)]
    assert readers[1].who == "user bob through agent coder" and readers[2].who == "user bob"
    assert readers[3].until == 80.0, "a derived manifest lasts only as long as its source"


@pytest.mark.parametrize("agent_place", [ScopeKey.agent("acme", "coder", "alice"), ScopeKey.task("acme", "coder", "alice", "t1")])
def test_readers_of_a_shared_agent_or_task_memory_include_its_share_audience(agent_place):
    shared = readers_of(policy, agent_place, Status.ACTIVE, "alice", [], [], 1.0, shared_with=frozenset({"*", "tester"}))
    assert [r.who for r in shared if r.via == "share"] == ["every agent acting for user alice", "agent tester acting for user alice"]


def test_readers_of_a_team_are_its_members_and_a_share_list_means_nothing_outside_an_agents_place():
    agent_place = ScopeKey.agent("acme", "coder", "alice")
    assert not [r for r in readers_of(policy, ALPHA, Status.ACTIVE, "alice", [], [], 1.0, shared_with=frozenset({"tester"})) if r.via == "share"]
    team = ScopeKey.team("acme", "pilgrims")
    members = readers_of(policy, team, Status.ACTIVE, "alice", [], [], 1.0, team_members=frozenset({"b", "a"}))
    assert [r.via for r in members] == ["team", "admin"] and "(a, b)" in members[0].who
    assert [r.via for r in readers_of(policy, team, Status.ACTIVE, "alice", [], [], 1.0)] == ["admin"]
    assert not [r for r in readers_of(policy, agent_place, Status.ACTIVE, "alice", [], [], 1.0, team_members=frozenset({"a"})) if r.via == "team"]


@pytest.mark.parametrize("status", [Status.PENDING, Status.SUPERSEDED])
def test_readers_of_a_non_active_memory_are_its_author_its_approvers_and_the_admins(status):
    dept = ScopeKey.department("acme", "eng")
    readers = readers_of(policy, dept, status, "alice", [_grant("g", dept)], [(_manifest("m"), ())], 1.0)
    assert [r.via for r in readers] == ["author", "approval queue", "approval queue", "admin"]
    assert readers[1].who == "approvers of department eng of tenant acme"
    ws = readers_of(policy, ALPHA, status, "alice", [], [], 1.0)
    assert ws[1].who == "approvers of workspace alpha of tenant acme"
    assert [r.via for r in readers_of(policy, ScopeKey.tenant("acme"), status, "alice", [], [], 1.0)] == ["author", "approval queue", "admin"]
    assert [r.via for r in readers_of(policy, ScopeKey.global_(), status, "alice", [], [], 1.0)] == ["author"]


# -- reads without a named scope, and edits -----------------------------------------------------
def test_a_scope_less_read_looks_in_the_default_scopes_and_the_agents_teams_only():
    scopes = default_read_scopes(policy, ALICE, ["pilgrims", "builders", "pilgrims"])
    assert scopes[: len(policy.own_scopes(ALICE))] == policy.own_scopes(ALICE)
    assert scopes[len(policy.own_scopes(ALICE)):] == [
        (ScopeKey.team("acme", "builders"), "member of team builders"), (ScopeKey.team("acme", "pilgrims"), "member of team pilgrims"),
    ]


def test_an_edit_needs_both_a_lookup_for_change_and_the_right_to_forget():
    assert may_edit(policy, ALICE, ALPHA, "alice", "acme")
    assert not may_edit(policy, ALICE, ALPHA, "bob", "acme"), "readable, but not hers to change"
    assert not may_edit(policy, ALICE, BETA, "alice", "acme"), "hers, but not in a scope she reads"
    assert may_edit(policy, ADMIN, BETA, "bob", "acme")
    assert not may_edit(policy, ADMIN, ELSEWHERE, "root", "acme")
