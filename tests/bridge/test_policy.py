"""Policy: readable scopes per identity and purpose, and the write rules of seed 003."""

from __future__ import annotations

import pytest

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.policy import Policy, PolicyConfig
from bridge.state.records import Grant, InjectDepth, InjectionManifest
from bridge.vocabulary import Kind, Purpose

policy = Policy()


def _grant(scope: ScopeKey, grant_id: str) -> Grant:
    return Grant(grant_id, "acme", "alice", None, scope, "acme/dave@assistant", "test", 0.0, 9e12)


def _manifest(scope: ScopeKey, memory_id: str, manifest_id: str, parent_agent: str) -> InjectionManifest:
    return InjectionManifest(manifest_id, "acme", "alice", parent_agent, "child", "task", InjectDepth.MINIMAL, ((scope, memory_id),), False, 0.0, 9e12)


def test_default_readable_scopes_are_exactly_own_agent_workspace_departments_tenant_global(make_identity):
    alice = make_identity(departments=("eng", "ops"))
    keys = set(policy.readable_scopes(alice, Purpose.CHAT).keys)
    assert keys == {
        ScopeKey.private("acme", "alice"),
        ScopeKey.agent("acme", "assistant", "alice"),
        ScopeKey.workspace("acme", "alpha"),
        ScopeKey.department("acme", "eng"),
        ScopeKey.department("acme", "ops"),
        ScopeKey.tenant("acme"),
        ScopeKey.global_(),
    }


def test_other_agent_scope_of_same_user_is_not_readable(make_identity):
    coder = make_identity(agent="coder")
    assert ScopeKey.agent("acme", "assistant", "alice") not in policy.readable_scopes(coder, Purpose.CHAT)


def test_chat_weights_follow_seed_003(make_identity):
    scopes = policy.readable_scopes(make_identity(), Purpose.CHAT)
    weight = {e.key.visibility: e.weight for e in scopes}
    assert weight[Visibility.PRIVATE] == 1.0
    assert weight[Visibility.WORKSPACE] == 0.95
    assert weight[Visibility.DEPARTMENT] == 0.85
    assert weight[Visibility.TENANT] == 0.70
    assert weight[Visibility.GLOBAL] == 0.50


def test_coding_puts_workspace_before_private(make_identity):
    scopes = policy.readable_scopes(make_identity(), Purpose.CODING)
    weight = {e.key.visibility: e.weight for e in scopes}
    assert weight[Visibility.WORKSPACE] > weight[Visibility.DEPARTMENT] > weight[Visibility.PRIVATE] > weight[Visibility.TENANT]


def test_granted_scope_weighs_less_and_carries_the_grant(make_identity):
    scopes = policy.readable_scopes(make_identity(), Purpose.CHAT, grants=[_grant(ScopeKey.department("acme", "sales"), "g1")])
    entry = scopes.entry(ScopeKey.department("acme", "sales"))
    assert entry.grant_id == "g1" and entry.weight < 0.85 and "g1" in entry.reason


def test_grant_for_another_tenant_is_refused(make_identity):
    with pytest.raises(NotPermitted, match="another tenant"):
        policy.readable_scopes(make_identity(), Purpose.CHAT, grants=[_grant(ScopeKey.department("globex", "eng"), "g1")])


def test_injected_entry_is_restricted_to_manifest_ids(make_identity):
    key = ScopeKey.agent("acme", "orchestrator", "alice")
    scopes = policy.readable_scopes(make_identity(agent="child"), Purpose.CHAT, manifest=_manifest(key, "m1", "man1", "orchestrator"))
    assert scopes.permits(key, "m1") and not scopes.permits(key, "m2")


@pytest.mark.parametrize(
    "kind, expected",
    [
        (Kind.PREFERENCE, ScopeKey.private("acme", "alice")),
        (Kind.PROFILE, ScopeKey.private("acme", "alice")),
        (Kind.DECISION, ScopeKey.workspace("acme", "alpha")),
        (Kind.FACT, ScopeKey.workspace("acme", "alpha")),
        (Kind.EXPERIENCE, ScopeKey.agent("acme", "assistant", "alice")),
    ],
)
def test_default_write_targets(kind, expected, make_identity):
    assert policy.decide_write(make_identity(), kind, None).scope == expected


def test_decision_without_workspace_stays_private(make_identity):
    assert policy.decide_write(make_identity(workspace=None), Kind.DECISION, None).scope == ScopeKey.private("acme", "alice")


def test_explicit_workspace_write_without_workspace_is_refused(make_identity):
    with pytest.raises(NotPermitted, match="no workspace_id"):
        policy.decide_write(make_identity(workspace=None), Kind.DECISION, Visibility.WORKSPACE)


def test_department_standard_is_pending_unless_written_by_an_approver(make_identity):
    assert policy.decide_write(make_identity(), Kind.STANDARD, None).status is Status.PENDING
    assert policy.decide_write(make_identity(roles=("approver",)), Kind.STANDARD, None).status is Status.ACTIVE


def test_department_write_to_a_foreign_department_is_refused(make_identity):
    with pytest.raises(NotPermitted, match="not a member"):
        policy.decide_write(make_identity(), Kind.STANDARD, Visibility.DEPARTMENT, department_id="sales")


def test_tenant_writes_need_admin(make_identity):
    with pytest.raises(NotPermitted, match="admin"):
        policy.decide_write(make_identity(), Kind.FACT, Visibility.TENANT)
    assert policy.decide_write(make_identity(roles=("admin",)), Kind.FACT, Visibility.TENANT).status is Status.ACTIVE


def test_global_writes_need_the_role_in_a_global_writer_tenant(make_identity):
    """A tenant's own IdP asserts roles: global_admin alone must not reach every other tenant."""
    with pytest.raises(NotPermitted, match="global_writer_tenants"):
        policy.decide_write(make_identity(roles=("global_admin",)), Kind.FACT, Visibility.GLOBAL)
    platform = Policy(PolicyConfig(global_writer_tenants=frozenset({"platform"})))
    with pytest.raises(NotPermitted):
        platform.decide_write(make_identity(roles=("global_admin",)), Kind.FACT, Visibility.GLOBAL)
    with pytest.raises(NotPermitted):
        platform.decide_write(make_identity(tenant="platform"), Kind.FACT, Visibility.GLOBAL)
    ok = platform.decide_write(make_identity(tenant="platform", roles=("global_admin",)), Kind.FACT, Visibility.GLOBAL)
    assert ok.scope == ScopeKey.global_()


def test_approver_only_for_own_department_and_workspace(make_identity):
    approver = make_identity(roles=("approver",))
    assert policy.may_approve(approver, ScopeKey.department("acme", "eng"))
    assert not policy.may_approve(approver, ScopeKey.department("acme", "sales"))
    assert not policy.may_approve(approver, ScopeKey.tenant("acme"))
    assert not policy.may_approve(make_identity(), ScopeKey.department("acme", "eng"))
    assert not policy.may_approve(make_identity(tenant="globex", roles=("admin",)), ScopeKey.department("acme", "eng"))
