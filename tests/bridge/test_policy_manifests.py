"""Injection rules (bridge/policy/__init__.py, the injection part), each at its edges: who injects
into whom, what an injected entry reads and how it weighs, who revokes a manifest, and that what
was injected stays read-only to the child. Pure functions of identities and manifests."""

from __future__ import annotations

import pytest

from adapters.scopes import ReadSource, ScopeKey
from bridge.errors import ManifestError, NotPermitted
from bridge.policy import Policy, PolicyConfig
from bridge.state.records import AuditView, InjectDepth, InjectionManifest
from bridge.vocabulary import Purpose
from tests.kit import make_identity

policy = Policy()
PARENT = make_identity("alice", agent="brain")
CHILD = make_identity("alice", agent="child")
ALPHA, BETA = ScopeKey.workspace("acme", "alpha"), ScopeKey.workspace("acme", "beta")
BRAIN_PLACE = ScopeKey.agent("acme", "brain", "alice")


def _manifest(mid: str = "m", *, entries=((BRAIN_PLACE, "m1"),), parent: str | None = None, may_reinject: bool = False,
              issuer: str = "brain", child: str = "child", user: str = "alice", tenant: str = "acme") -> InjectionManifest:
    return InjectionManifest(mid, tenant, user, issuer, child, "task", InjectDepth.MINIMAL, tuple(entries), may_reinject, 0.0, 100.0, parent)


def test_a_parent_never_injects_into_itself():
    with pytest.raises(ManifestError, match="into itself"):
        policy.check_inject(PARENT, "brain", None)
    policy.check_inject(PARENT, "child", None)


def test_a_re_injection_needs_a_manifest_that_allows_it():
    policy.check_inject(CHILD, "grandchild", _manifest(may_reinject=True))
    with pytest.raises(ManifestError, match="does not allow re-injection"):
        policy.check_inject(CHILD, "grandchild", _manifest(may_reinject=False))


def test_an_injected_entry_reads_only_its_ids_and_weighs_below_the_place():
    scopes = policy.readable_scopes(CHILD, Purpose.CHAT, manifest=_manifest())
    entry = scopes.entry(BRAIN_PLACE)
    assert entry.memory_ids == frozenset({"m1"}) and entry.source is ReadSource.MANIFEST and entry.injected_by == "alice@brain"
    assert entry.weight == pytest.approx(policy.config.injected_weight * policy.scope_weight(Purpose.CHAT, BRAIN_PLACE.visibility))


def test_an_injection_never_narrows_a_place_the_child_reads_in_full():
    child_in_alpha = make_identity("alice", agent="child", workspace="alpha")
    scopes = policy.readable_scopes(child_in_alpha, Purpose.CHAT, manifest=_manifest(entries=((ALPHA, "m1"), (BETA, "m2"))))
    assert scopes.entry(ALPHA).memory_ids is None and scopes.entry(ALPHA).source is ReadSource.OWN
    assert scopes.entry(BETA).memory_ids == frozenset({"m2"})


def test_an_injection_naming_another_tenants_scope_is_refused():
    with pytest.raises(NotPermitted, match="another tenant"):
        policy.readable_scopes(CHILD, Purpose.CHAT, manifest=_manifest(entries=((ScopeKey.workspace("globex", "a"), "m1"),)))
    scopes = policy.readable_scopes(CHILD, Purpose.CHAT, manifest=_manifest(entries=((ScopeKey.global_(), "g1"),)))
    assert scopes.entry(ScopeKey.global_()).memory_ids is None, "global memory is read in full by every tenant"
    closed = Policy(PolicyConfig(include_global=False))
    assert closed.readable_scopes(CHILD, Purpose.CHAT, manifest=_manifest(entries=((ScopeKey.global_(), "g1"),))).entry(ScopeKey.global_()).memory_ids == frozenset({"g1"})


def test_a_manifest_is_revoked_by_its_issuer_an_issuer_up_its_chain_or_a_tenant_admin():
    root = _manifest("root", issuer="brain", may_reinject=True)
    leaf = _manifest("leaf", parent="root", issuer="child", child="grandchild")
    policy.check_manifest_revoke(CHILD, leaf, [root], "leaf")
    policy.check_manifest_revoke(PARENT, leaf, [root], "leaf")
    policy.check_manifest_revoke(make_identity("root", roles=["admin"]), leaf, [root], "leaf")
    refused = [
        (make_identity("alice", agent="grandchild"), leaf),  # the receiving child
        (make_identity("bob", agent="brain"), leaf),  # another user's agent of the same name
        (make_identity("root", tenant="globex", roles=["admin"]), leaf),  # another tenant's admin
        (PARENT, None),
        (make_identity("alice", tenant="globex", agent="brain"), _manifest("x", tenant="globex", issuer="other")),
    ]
    for who, manifest in refused:
        with pytest.raises(ManifestError, match="no manifest 'leaf' issued by"):
            policy.check_manifest_revoke(who, manifest, [root], "leaf")


def test_an_injected_memory_is_read_only_to_the_child_it_was_injected_into_only():
    held = [_manifest(entries=((ALPHA, "m1"),))]
    with pytest.raises(NotPermitted, match="injected memories are read-only"):
        policy.check_not_injected(CHILD, ALPHA, "m1", held)
    policy.check_not_injected(CHILD, ALPHA, "m2", held)
    policy.check_not_injected(CHILD, BETA, "m1", held)
    policy.check_not_injected(PARENT, ALPHA, "m1", held)
    policy.check_not_injected(make_identity("bob", agent="child"), ALPHA, "m1", held)
    policy.check_not_injected(make_identity("alice", tenant="globex", agent="child"), ALPHA, "m1", held)


def test_the_audit_shows_an_admin_the_tenant_and_anyone_else_their_own_rows():
    assert policy.audit_view(make_identity("root", roles=["admin"])) == AuditView("acme", None)
    assert policy.audit_view(CHILD) == AuditView("acme", "alice")
