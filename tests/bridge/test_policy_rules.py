"""The permission rules no other test pinned down, each at its edges: every test here kills
mutants of the policy modules (tests/mutation/mutate_policy.py) that survived the rest of the
suite — a rule that could be broken with every test green.

Pure functions of identities and records: no store, no door."""

from __future__ import annotations

import pytest

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput, ManifestError, NotPermitted
from bridge.policy import Policy, PolicyConfig
from bridge.policy.config import MAX_GRANT_TTL_SECONDS
from bridge.policy.quotas import QuotaConfig, QuotaLimits
from bridge.policy.reads import approvable_scopes, grants_subject, may_see_status
from bridge.policy.sharing import private_target
from bridge.state.records import Grant, InjectDepth, InjectionManifest
from tests.kit import make_identity

policy = Policy()
ALICE = make_identity("alice", workspace="alpha", departments=("eng",))
ADMIN = make_identity("root", roles=["admin"])
WS_APPROVER = make_identity("wendy", workspace="alpha", departments=(), roles=["approver"])
DEPT_APPROVER = make_identity("dan", workspace=None, departments=("eng",), roles=["approver"])
ALPHA, BETA = ScopeKey.workspace("acme", "alpha"), ScopeKey.workspace("acme", "beta")
ENG, OPS = ScopeKey.department("acme", "eng"), ScopeKey.department("acme", "ops")


# -- promotion --------------------------------------------------------------------------------
def test_a_non_admins_promotion_is_a_pending_proposal_and_an_admins_is_live():
    proposal = policy.decide_promotion(ALICE, ALPHA, "alice", None, Visibility.TENANT)
    assert proposal.target == ScopeKey.tenant("acme") and proposal.status is Status.PENDING and not proposal.supersede_source
    direct = policy.decide_promotion(ADMIN, ALPHA, "alice", None, Visibility.TENANT)
    assert direct.status is Status.ACTIVE and direct.supersede_source


def test_a_same_reach_promotion_is_refused():
    beta_member = make_identity("alice", workspace="beta")
    with pytest.raises(NotPermitted, match="only widens"):  # workspace alpha -> workspace beta
        policy.decide_promotion(beta_member, ALPHA, "alice", None, Visibility.WORKSPACE)
    with pytest.raises(NotPermitted, match="only widens"):
        policy.decide_promotion(ADMIN, ScopeKey.tenant("acme"), "alice", None, Visibility.TENANT)
    widened = policy.decide_promotion(ALICE, ScopeKey.private("acme", "alice"), "alice", None, Visibility.WORKSPACE)
    assert widened.target == ALPHA


def test_a_non_author_non_admin_cannot_propose_and_another_tenant_never():
    with pytest.raises(NotPermitted, match="only the author"):
        policy.decide_promotion(ALICE, ALPHA, "bob", None, Visibility.TENANT)
    with pytest.raises(NotPermitted, match="not a memory of tenant"):
        policy.decide_promotion(ADMIN, ScopeKey.workspace("globex", "alpha"), "root", None, Visibility.TENANT)


# -- approval -----------------------------------------------------------------------------------
def test_a_workspace_approver_approves_in_their_own_workspace_only():
    assert policy.may_approve(WS_APPROVER, ALPHA)
    assert not policy.may_approve(WS_APPROVER, BETA)
    assert not policy.may_approve(WS_APPROVER, ENG)
    assert not policy.may_approve(WS_APPROVER, ScopeKey.tenant("acme"))
    assert not policy.may_approve(ALICE, ALPHA), "a member without the approver role approves nothing"
    assert policy.may_approve(DEPT_APPROVER, ENG) and not policy.may_approve(DEPT_APPROVER, OPS)
    assert not policy.may_approve(make_identity("x", tenant="globex", roles=["admin"]), ALPHA)
    assert policy.may_approve(ADMIN, BETA) and policy.may_approve(ADMIN, ScopeKey.tenant("acme"))


def test_the_approval_queue_lists_only_scopes_the_caller_may_approve():
    every = [ALPHA, BETA, ENG, OPS, ScopeKey.tenant("acme"), ScopeKey.private("acme", "alice"), ScopeKey.agent("acme", "a", "alice")]
    assert approvable_scopes(policy, WS_APPROVER, every) == [ALPHA]
    assert approvable_scopes(policy, DEPT_APPROVER, every) == [ENG]
    assert approvable_scopes(policy, ADMIN, every) == sorted([ALPHA, BETA, ENG, OPS, ScopeKey.tenant("acme")], key=str)
    assert approvable_scopes(policy, ALICE, every) == []


@pytest.mark.parametrize("status", [Status.PENDING, Status.SUPERSEDED])
def test_a_non_active_memory_is_shown_to_its_author_and_approvers_only(status):
    assert may_see_status(policy, ALICE, BETA, Status.ACTIVE, "bob")
    assert not may_see_status(policy, ALICE, ALPHA, status, "bob")
    assert may_see_status(policy, ALICE, ALPHA, status, "alice")
    assert may_see_status(policy, WS_APPROVER, ALPHA, status, "bob")
    assert not may_see_status(policy, WS_APPROVER, BETA, status, "bob")


# -- grants -------------------------------------------------------------------------------------
@pytest.mark.parametrize("scope", [
    ScopeKey.team("acme", "pilgrims"), ScopeKey.agent("acme", "coder", "bob"), ScopeKey.private("acme", "bob"),
    ScopeKey.task("acme", "coder", "bob", "t1"),
])
def test_an_admin_cannot_grant_personal_or_team_scopes(scope):
    with pytest.raises(NotPermitted, match="cannot be granted"):
        policy.check_grant_issue(ADMIN, scope, 3600, "audit")


def test_grant_issue_rules_at_their_edges():
    policy.check_grant_issue(ADMIN, ALPHA, MAX_GRANT_TTL_SECONDS, "audit")  # exactly the limit: allowed
    policy.check_grant_issue(ADMIN, ALPHA, 0.001, "audit")
    for ttl in (0, -1, MAX_GRANT_TTL_SECONDS + 0.001):
        with pytest.raises(NotPermitted, match="expire within"):
            policy.check_grant_issue(ADMIN, ALPHA, ttl, "audit")
    with pytest.raises(NotPermitted, match="reason"):
        policy.check_grant_issue(ADMIN, ALPHA, 60, "   ")
    with pytest.raises(NotPermitted, match="role"):
        policy.check_grant_issue(ALICE, ALPHA, 60, "audit")
    with pytest.raises(NotPermitted, match="never cross tenants"):
        policy.check_grant_issue(ADMIN, ScopeKey.workspace("globex", "alpha"), 60, "audit")


def _grant(tenant="acme", revoked_at=None, expires_at=9e12) -> Grant:
    return Grant("g1", tenant, "alice", None, BETA, "acme/root@assistant", "audit", 0.0, expires_at, revoked_at)


def test_revoking_needs_an_active_grant_of_the_admins_tenant():
    policy.check_grant_revoke(ADMIN, _grant(), "g1")
    for grant in (None, _grant(revoked_at=5.0), _grant(tenant="globex")):
        with pytest.raises(NotPermitted, match="no active grant"):
            policy.check_grant_revoke(ADMIN, grant, "g1")
    with pytest.raises(NotPermitted, match="role"):
        policy.check_grant_revoke(ALICE, _grant(), "g1")


def test_only_an_admin_lists_another_users_grants():
    assert grants_subject(ALICE, None) == "alice" and grants_subject(ALICE, "alice") == "alice"
    with pytest.raises(NotPermitted):
        grants_subject(ALICE, "bob")
    assert grants_subject(ADMIN, "bob") == "bob"


def test_a_grant_authorises_until_its_expiry_instant_only():
    g = _grant(expires_at=100.0)
    assert policy.authorise_grant(ALICE, BETA, [g], 99.9) is g
    with pytest.raises(NotPermitted, match="expired or was revoked"):
        policy.authorise_grant(ALICE, BETA, [g], 100.0)
    with pytest.raises(NotPermitted, match="no grant"):
        policy.authorise_grant(make_identity("bob"), BETA, [g], 1.0)


# -- forgetting ---------------------------------------------------------------------------------
def test_a_global_memory_is_forgotten_by_a_global_writer_of_the_writing_tenant_only():
    writers = Policy(PolicyConfig(global_writer_tenants=frozenset({"acme"})))
    g = ScopeKey.global_()
    member, global_admin = make_identity("alice"), make_identity("root", roles=["admin", "global_admin"])
    assert not writers.may_forget(member, g, "alice", "acme"), "a member of the writing tenant is no global writer"
    assert not writers.may_forget(make_identity("root", roles=["admin"]), g, "root", "acme")
    assert writers.may_forget(global_admin, g, "bob", "acme")
    assert not writers.may_forget(global_admin, g, "bob", "globex")
    assert not policy.may_forget(global_admin, g, "bob", "acme"), "no tenant writes global memory unless configured"


def test_forget_in_shared_scopes_is_for_authors_and_admins():
    assert policy.may_forget(ALICE, ALPHA, "alice") and not policy.may_forget(ALICE, ALPHA, "bob")
    assert not policy.may_forget(ALICE, BETA, "alice"), "authorship outside the caller's readable scopes is not enough"
    assert policy.may_forget(ADMIN, BETA, "bob") and not policy.may_forget(ADMIN, ScopeKey.workspace("globex", "a"), "root")
    assert policy.may_forget(ALICE, ScopeKey.private("acme", "alice"), "someone")


def test_erasure_of_a_subject_is_for_the_subject_or_an_admin():
    policy.may_erase_subject(ALICE, "alice")
    policy.may_erase_subject(ADMIN, "alice")
    with pytest.raises(NotPermitted):
        policy.may_erase_subject(ALICE, "bob")


def test_include_global_false_reads_no_global_scope():
    closed = Policy(PolicyConfig(include_global=False))
    assert ScopeKey.global_() not in {k for k, _ in closed.own_scopes(ALICE)}
    assert ScopeKey.global_() in {k for k, _ in policy.own_scopes(ALICE)}
    assert not closed.includes_global_of("acme") and policy.includes_global_of("acme")
    assert Policy(PolicyConfig(include_global=False, global_writer_tenants=frozenset({"acme"}))).includes_global_of("acme")


# -- manifests ----------------------------------------------------------------------------------
def _manifest(mid: str, parent: str | None = None, expires_at: float = 100.0, revoked_at: float | None = None) -> InjectionManifest:
    return InjectionManifest(mid, "acme", "alice", "brain", "child", "task", InjectDepth.MINIMAL, ((ALPHA, "m1"),), False, 0.0, expires_at, parent, revoked_at)


CHILD = make_identity("alice", agent="child")


def test_a_re_injected_manifest_is_checked_against_its_root_too():
    root, middle = _manifest("root"), _manifest("middle", parent="root")
    leaf = _manifest("leaf", parent="middle")
    policy.check_manifest_use(CHILD, leaf, [middle, root], 50.0)
    for chain in ([middle, _manifest("root", revoked_at=1.0)], [middle, _manifest("root", expires_at=10.0)]):
        with pytest.raises(ManifestError, match="its source root"):
            policy.check_manifest_use(CHILD, leaf, chain, 50.0)
    with pytest.raises(ManifestError, match="no longer exists"):  # the root is gone: the chain ends in a parent id
        policy.check_manifest_use(CHILD, leaf, [middle], 50.0)


def test_a_manifest_is_unusable_at_exactly_its_expiry_instant():
    m = _manifest("m")
    policy.check_manifest_use(CHILD, m, [], 99.999)
    with pytest.raises(ManifestError, match="expired"):
        policy.check_manifest_use(CHILD, m, [], 100.0)
    # issued to another agent: refused exactly as a made-up id is, so ids cannot be probed
    with pytest.raises(ManifestError, match="no injection manifest 'm'"):
        policy.check_manifest_use(make_identity("alice", agent="other"), m, [], 1.0)


# -- seed 000's memory_type ---------------------------------------------------------------------
@pytest.mark.parametrize("shared", [Visibility.WORKSPACE, Visibility.DEPARTMENT, Visibility.TENANT, Visibility.GLOBAL, Visibility.TEAM])
def test_private_memory_type_never_takes_a_shared_visibility(shared):
    with pytest.raises(InvalidInput, match="private"):
        private_target(ALICE, shared)


def test_private_memory_type_lands_in_the_agents_own_place():
    assert private_target(ALICE, None) is Visibility.AGENT
    in_task = make_identity("alice").model_copy(update={"task_id": "t1"})
    assert private_target(in_task, None) is Visibility.TASK
    assert private_target(ALICE, Visibility.PRIVATE) is Visibility.PRIVATE


# -- quotas -------------------------------------------------------------------------------------
def test_quota_overrides_replace_only_what_they_name():
    tenant, user = QuotaLimits(10, None), QuotaLimits(None, 500)
    cfg = QuotaConfig(tenant=tenant, user=user, overrides={"big": (QuotaLimits(100, None), None), "small": (None, QuotaLimits(1, None))})
    assert cfg.limits_for("acme") == (tenant, user)
    assert cfg.limits_for("big") == (QuotaLimits(100, None), user)
    assert cfg.limits_for("small") == (tenant, QuotaLimits(1, None))
    assert cfg.enabled and not QuotaConfig().enabled
    assert QuotaConfig(overrides={"x": (None, QuotaLimits(1, None))}).enabled
    assert QuotaConfig(overrides={"x": (QuotaLimits(None, 5), None)}).enabled
    assert not QuotaConfig(overrides={"x": (None, None), "y": (QuotaLimits(), QuotaLimits())}).enabled


# -- reading by reference -----------------------------------------------------------------------
def test_read_by_reference_needs_a_default_scope_or_an_active_grant():
    from bridge.policy.reads import approves_anything, read_reason

    assert read_reason(policy, ALICE, ALPHA, [], 1.0) == "current workspace alpha"
    with pytest.raises(NotPermitted, match="no grant"):
        read_reason(policy, ALICE, BETA, [], 1.0)
    assert read_reason(policy, ALICE, BETA, [_grant()], 1.0) == "authorised by grant g1"
    with pytest.raises(NotPermitted, match="cross-tenant"):
        read_reason(policy, ALICE, ScopeKey.workspace("globex", "alpha"), [_grant()], 1.0)
    assert approves_anything(WS_APPROVER) and approves_anything(ADMIN) and not approves_anything(ALICE)
