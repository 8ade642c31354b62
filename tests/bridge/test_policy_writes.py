"""Where a memory lands, who may change it and how far it may be promoted
(bridge/policy/__init__.py), each rule at its edges. Pure functions of identities; no store."""

from __future__ import annotations

import pytest

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.policy import Policy, PolicyConfig
from bridge.vocabulary import Kind, Purpose
from tests.kit import make_identity

policy = Policy()
writers = Policy(PolicyConfig(global_writer_tenants=frozenset({"acme"})))
ALICE = make_identity("alice", workspace="alpha", departments=("eng",))
ADMIN = make_identity("root", roles=["admin"])
GLOBAL_ADMIN = make_identity("root", roles=["admin", "global_admin"])
ALPHA, BETA = ScopeKey.workspace("acme", "alpha"), ScopeKey.workspace("acme", "beta")


# -- writing ------------------------------------------------------------------------------------
def test_task_memory_needs_a_task_in_the_session():
    with pytest.raises(NotPermitted, match="names no task_id"):
        policy.decide_write(ALICE, Kind.NOTE, Visibility.TASK)
    in_task = ALICE.model_copy(update={"task_id": "t1"})
    assert policy.decide_write(in_task, Kind.NOTE, Visibility.TASK).scope == ScopeKey.task("acme", "assistant", "alice", "t1")


def test_team_memory_is_never_decided_as_a_plain_write():
    """Team memory has its own rule (membership, `decide_team_write`); the plain write refuses it."""
    with pytest.raises(NotPermitted, match="unknown visibility"):
        policy.decide_write(ALICE, Kind.NOTE, Visibility.TEAM)


def test_a_department_write_says_whether_it_awaits_approval():
    pending = policy.decide_write(ALICE, Kind.STANDARD, None)
    assert pending.status is Status.PENDING and pending.reason == "department shared (approval required)"
    approver = make_identity("dan", departments=("eng",), roles=["approver"])
    live = policy.decide_write(approver, Kind.STANDARD, None)
    assert live.status is Status.ACTIVE and live.reason == "department shared, written by an approver"


def test_a_member_of_several_departments_names_the_department():
    both = make_identity("alice", departments=("eng", "ops"))
    with pytest.raises(NotPermitted, match="need department_id when the identity belongs to 2 departments"):
        policy.decide_write(both, Kind.STANDARD, None)
    assert policy.decide_write(both, Kind.STANDARD, None, department_id="ops").scope == ScopeKey.department("acme", "ops")
    with pytest.raises(NotPermitted, match="need department_id when the identity belongs to 0 departments"):
        policy.decide_write(make_identity("x", departments=()), Kind.STANDARD, None)


# -- reading by default, and its cache ----------------------------------------------------------
def test_reads_by_default_is_membership_of_the_default_scopes():
    assert policy.reads_by_default(ALICE, ALPHA) and policy.reads_by_default(ALICE, ScopeKey.private("acme", "alice"))
    assert not policy.reads_by_default(ALICE, BETA)
    assert not policy.reads_by_default(ALICE, ScopeKey.private("acme", "bob"))


def test_the_default_scope_set_is_built_once_per_identity_and_purpose():
    fresh = Policy()
    bob = make_identity("bob")
    first = fresh.readable_scopes(ALICE, Purpose.CHAT)
    fresh.readable_scopes(bob, Purpose.CHAT)
    fresh.readable_scopes(ALICE, Purpose.CODING)
    assert fresh.readable_scopes(ALICE, Purpose.CHAT) is first, "a second identity must not evict the first"


# -- grants -------------------------------------------------------------------------------------
def test_a_grant_naming_the_global_scope_is_refused():
    """Grants never name the global scope (`check_grant_issue` refuses it: it is no scope of the
    admin's tenant); a stored one that did is refused at read time too, not silently honoured."""
    from bridge.state.records import Grant

    g = Grant("g1", "acme", "alice", None, ScopeKey.global_(), "acme/root@assistant", "audit", 0.0, 9e12)
    with pytest.raises(NotPermitted, match="another tenant"):
        Policy(PolicyConfig(include_global=False)).readable_scopes(ALICE, Purpose.CHAT, grants=[g])
    with pytest.raises(NotPermitted, match="never cross tenants"):
        policy.check_grant_issue(ADMIN, ScopeKey.global_(), 60, "audit")


def test_a_grant_for_one_agent_authorises_that_agent_only():
    from bridge.state.records import Grant

    g = Grant("g1", "acme", "alice", "coder", BETA, "acme/root@assistant", "audit", 0.0, 100.0)
    coder = make_identity("alice", agent="coder")
    assert policy.authorise_grant(coder, BETA, [g], 1.0) is g
    with pytest.raises(NotPermitted, match="no grant"):
        policy.authorise_grant(ALICE, BETA, [g], 1.0)


def test_of_several_active_grants_the_longest_lived_is_used():
    from bridge.state.records import Grant

    short = Grant("short", "acme", "alice", None, BETA, "acme/root@assistant", "audit", 0.0, 50.0)
    long = Grant("long", "acme", "alice", None, BETA, "acme/root@assistant", "audit", 0.0, 90.0)
    assert policy.authorise_grant(ALICE, BETA, [short, long], 1.0) is long
    assert policy.authorise_grant(ALICE, BETA, [long, short], 1.0) is long


# -- changing memories --------------------------------------------------------------------------
def test_a_lookup_for_change_is_in_the_default_scopes_or_anywhere_in_the_tenant_for_its_admin():
    assert policy.may_fetch_for_change(ALICE, ALPHA) and not policy.may_fetch_for_change(ALICE, BETA)
    assert policy.may_fetch_for_change(ADMIN, BETA)
    assert not policy.may_fetch_for_change(ADMIN, ScopeKey.workspace("globex", "beta"))
    assert not policy.may_fetch_for_change(make_identity("alice", roles=["approver"]), BETA)


# -- promotion ----------------------------------------------------------------------------------
def test_a_global_memory_is_promoted_only_by_a_global_writer_of_the_tenant_that_wrote_it():
    with pytest.raises(NotPermitted, match="not a memory of tenant acme"):
        writers.decide_promotion(ADMIN, ScopeKey.global_(), "root", "acme", Visibility.TENANT)
    with pytest.raises(NotPermitted, match="not a memory of tenant acme"):
        writers.decide_promotion(GLOBAL_ADMIN, ScopeKey.global_(), "root", "globex", Visibility.TENANT)
    with pytest.raises(NotPermitted, match="only widens"):  # it passes the tenant rule, then cannot widen
        writers.decide_promotion(GLOBAL_ADMIN, ScopeKey.global_(), "root", "acme", Visibility.GLOBAL)


def test_promotion_to_a_workspace_needs_a_workspace_and_never_targets_a_personal_place():
    nowhere = make_identity("alice", workspace=None)
    with pytest.raises(NotPermitted, match="cannot promote to workspace"):
        policy.decide_promotion(nowhere, ScopeKey.private("acme", "alice"), "alice", None, Visibility.WORKSPACE)
    for to in (Visibility.PRIVATE, Visibility.AGENT, Visibility.TASK, Visibility.TEAM):
        with pytest.raises(NotPermitted, match=f"cannot promote to {to.value}"):
            policy.decide_promotion(ADMIN, ScopeKey.private("acme", "root"), "root", None, to)


def test_a_promotion_says_whether_it_is_live_or_a_proposal():
    assert policy.decide_promotion(ADMIN, ALPHA, "alice", None, Visibility.TENANT).reason == "promoted by an admin"
    assert policy.decide_promotion(ALICE, ALPHA, "alice", None, Visibility.TENANT).reason == "promotion proposal awaiting approval"
    to_global = writers.decide_promotion(GLOBAL_ADMIN, ScopeKey.tenant("acme"), "bob", None, Visibility.GLOBAL)
    assert to_global.status is Status.ACTIVE and to_global.target == ScopeKey.global_() and to_global.supersede_source
