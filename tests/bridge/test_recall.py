"""The recall pipeline: scoped search, guard alarms, ranking, budget, rendering, fail-closed."""

from __future__ import annotations

import pytest

from adapters.base import Hit, SearchResult
from adapters.scopes import ScopeKey
from bridge import InvalidInput, MemoryBridge, NotPermitted, RecallIncomplete
from bridge.state.sqlite import SqliteState


class LyingBackend:
    """Wraps a real backend and injects a foreign hit into every search (an adapter bug)."""

    def __init__(self, inner, foreign_scope: ScopeKey, mislabel: bool = False):
        self.inner, self.foreign_scope, self.mislabel = inner, foreign_scope, mislabel
        self.name, self.capabilities = "lying", inner.capabilities

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def search(self, query):
        result = await self.inner.search(query)
        foreign = await self.inner.list(self.foreign_scope)
        extra = []
        for memory in foreign:
            claimed = query.scopes.keys[0] if self.mislabel else memory.scope
            extra.append(Hit(memory=memory, scope=claimed, score=0.99))
        return SearchResult(hits=tuple(extra) + result.hits)


class FailingBackend(LyingBackend):
    async def search(self, query):
        result = await self.inner.search(query)
        return SearchResult(hits=result.hits, failed_scopes=(query.scopes.keys[-1],), failure_reasons=("simulated outage",))


async def test_own_memories_are_recalled_with_provenance(bridge, make_identity):
    alice = make_identity()
    w = await bridge.remember(alice, "我喜欢简洁的回答", "preference")
    result = await bridge.recall(alice, "简洁的回答")
    (item,) = [i for i in result.items if i.memory_id == w.memory_id]
    assert item.scope == "acme/user/alice" and item.author == "alice@assistant" and item.why_visible == "own private memory"
    assert f"id={w.memory_id}" in result.context and "scope=acme/user/alice" in result.context


async def test_guard_drops_and_audits_a_hit_from_outside_the_scope_set(tmp_path, make_identity):
    base = MemoryBridge.open_local(tmp_path / "a")
    bob = make_identity("bob", departments=("sales",), workspace="beta")
    secret = await base.remember(bob, "bob's salary is 100k", "profile")
    lying = MemoryBridge(LyingBackend(base.backend, ScopeKey.private("acme", "bob")), SqliteState(tmp_path / "b.sqlite3"), reinitialise=True)
    alice = make_identity()
    result = await lying.recall(alice, "salary")
    assert secret.memory_id not in {i.memory_id for i in result.items}, "guard let a foreign hit through"
    assert result.guard_alarms == 1
    alarms = await lying.audit_events(make_identity("root", roles=("admin",), session="adm"), action="guard_alarm")
    assert alarms and alarms[0].memory_ids == (secret.memory_id,)
    await lying.aclose()


async def test_guard_drops_a_hit_mislabelled_with_a_permitted_scope(tmp_path, make_identity):
    base = MemoryBridge.open_local(tmp_path / "a")
    bob = make_identity("bob", departments=("sales",), workspace="beta")
    secret = await base.remember(bob, "bob's salary is 100k", "profile")
    lying = MemoryBridge(LyingBackend(base.backend, ScopeKey.private("acme", "bob"), mislabel=True), SqliteState(tmp_path / "b.sqlite3"), reinitialise=True)
    result = await lying.recall(make_identity(), "salary")
    assert secret.memory_id not in {i.memory_id for i in result.items}
    assert result.guard_alarms == 1
    await lying.aclose()


async def test_a_failed_scope_fails_closed(tmp_path, make_identity):
    base = MemoryBridge.open_local(tmp_path / "a")
    alice = make_identity()
    await base.remember(alice, "note one", "note")
    failing = MemoryBridge(FailingBackend(base.backend, ScopeKey.private("acme", "x")), SqliteState(tmp_path / "b.sqlite3"), reinitialise=True)
    with pytest.raises(RecallIncomplete, match="global"):
        await failing.recall(alice, "note")
    partial = await failing.recall(alice, "note", allow_partial=True)
    assert partial.partial and partial.failed_scopes == ("global",) and 'partial="true"' in partial.context
    await failing.aclose()


async def test_private_outranks_tenant_for_equal_text(bridge, make_identity):
    admin = make_identity("dave", roles=("admin",))
    alice = make_identity()
    t = await bridge.remember(admin, "the office wifi password rotates monthly", "fact", visibility="tenant")
    p = await bridge.remember(alice, "the office wifi password rotates monthly", "fact", visibility="private", idempotency_key="p1")
    result = await bridge.recall(alice, "office wifi password")
    ids = [i.memory_id for i in result.items]
    assert ids[0] == p.memory_id
    # identical text is de-duplicated; the tenant copy is kept as a duplicate reference
    assert t.memory_id not in ids and result.items[0].duplicates[0].memory_id == t.memory_id


async def test_lower_scope_wins_a_conflict_and_keeps_the_source(bridge, make_identity):
    admin = make_identity("dave", roles=("admin",))
    alice = make_identity()
    tenant = await bridge.remember(admin, "Default editor is VS Code", "preference", visibility="tenant", metadata={"topic": "editor"})
    mine = await bridge.remember(alice, "My editor is Neovim", "preference", metadata={"topic": "editor"})
    result = await bridge.recall(alice, "editor")
    ids = [i.memory_id for i in result.items]
    assert mine.memory_id in ids and tenant.memory_id not in ids
    (item,) = [i for i in result.items if i.memory_id == mine.memory_id]
    assert [c.memory_id for c in item.conflicts_with] == [tenant.memory_id]
    assert "overrides acme/tenant#" in result.context


async def test_budget_limits_the_rendered_items(bridge, make_identity):
    alice = make_identity()
    for n in range(20):
        await bridge.remember(alice, f"fact number {n} about the deployment pipeline and its many stages", "note")
    small = await bridge.recall(alice, "deployment pipeline", budget_tokens=80)
    large = await bridge.recall(alice, "deployment pipeline", budget_tokens=5000)
    assert 1 <= len(small.items) < len(large.items)
    assert small.tokens_used <= 80


async def test_kind_quota_and_kind_filter(tmp_path, make_identity):
    from bridge.recall.config import BudgetConfig

    b = MemoryBridge.open_local(tmp_path / "h", budget=BudgetConfig(kind_quotas={"note": 2}))
    alice = make_identity()
    for n in range(5):
        await b.remember(alice, f"deploy note {n}", "note")
    await b.remember(alice, "deploy preference: blue-green", "preference")
    result = await b.recall(alice, "deploy")
    kinds = [i.kind for i in result.items]
    assert kinds.count("note") == 2 and "preference" in kinds
    only = await b.recall(alice, "deploy", kinds=["preference"])
    assert {i.kind for i in only.items} == {"preference"}
    await b.aclose()


async def test_pending_memories_are_not_recalled(bridge, make_identity):
    alice = make_identity()
    pending = await bridge.remember(alice, "All services expose /health", "standard")
    assert pending.status == "pending"
    assert pending.memory_id not in {i.memory_id for i in (await bridge.recall(alice, "services health")).items}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"query": ""}, "must not be empty"),
        ({"query": "   "}, "must not be empty"),
        ({"query": "x" * 4001}, "limit is 4000"),
        ({"query": "ok", "purpose": "gossip"}, "unknown purpose"),
        ({"query": "ok", "kinds": ["secret"]}, "unknown kind"),
        ({"query": "ok", "kinds": []}, "at least one kind"),
        ({"query": "ok", "budget_tokens": 3}, "budget_tokens must be at least"),
        ({"query": "ok", "include_scopes": ["acme/../etc"]}, "not a scope"),
    ],
)
async def test_bad_recall_input_is_a_clear_error(bridge, make_identity, kwargs, message):
    query = kwargs.pop("query")
    with pytest.raises(InvalidInput, match=message):
        await bridge.recall(make_identity(), query, **kwargs)


async def test_granted_scope_requires_an_active_grant(bridge, make_identity):
    admin = make_identity("dave", roles=("admin",))
    bob = make_identity("bob", departments=("sales",), workspace="beta")
    eng = await bridge.remember(make_identity(roles=("approver",)), "eng standard: two reviewers", "standard")
    with pytest.raises(NotPermitted, match="no grant"):
        await bridge.recall(bob, "reviewers", include_scopes=["acme/dept/eng"])
    grant = await bridge.grant(admin, "bob", "acme/dept/eng", ttl_seconds=60, reason="incident review")
    result = await bridge.recall(bob, "reviewers", include_scopes=["acme/dept/eng"])
    (item,) = [i for i in result.items if i.memory_id == eng.memory_id]
    assert item.grant_id == grant.grant_id and "grant" in item.why_visible
    await bridge.revoke_grant(admin, grant.grant_id)
    with pytest.raises(NotPermitted, match="expired or was revoked"):
        await bridge.recall(bob, "reviewers", include_scopes=["acme/dept/eng"])


async def test_only_admins_grant_and_never_private_scopes(bridge, make_identity):
    with pytest.raises(NotPermitted, match="admin"):
        await bridge.grant(make_identity(), "bob", "acme/dept/eng", ttl_seconds=60, reason="x")
    with pytest.raises(NotPermitted, match="cannot be granted"):
        await bridge.grant(make_identity("dave", roles=("admin",)), "bob", "acme/user/alice", ttl_seconds=60, reason="x")
    with pytest.raises(NotPermitted, match="never cross tenants"):
        await bridge.grant(make_identity("dave", roles=("admin",)), "bob", "globex/dept/eng", ttl_seconds=60, reason="x")


async def test_continuing_another_identitys_session_is_refused(bridge, make_identity):
    from identity.errors import SessionIdentityMismatch

    alice = make_identity(session="shared-1")
    await bridge.recall(alice, "anything")
    with pytest.raises(SessionIdentityMismatch):
        await bridge.recall(make_identity("bob", session="shared-1"), "anything")
    with pytest.raises(SessionIdentityMismatch):  # a role change is a different identity too
        await bridge.recall(alice.model_copy(update={"roles": frozenset({"admin"})}), "anything")


class StatusLeakingBackend(LyingBackend):
    """Returns pending memories of a permitted scope although only active ones were asked for."""

    async def search(self, query):
        hits = [Hit(m, m.scope, 0.9) for m in await self.inner.list(query.scopes.keys[0])]
        return SearchResult(hits=tuple(hits))


async def test_guard_drops_statuses_that_were_not_asked_for(tmp_path, make_identity):
    base = MemoryBridge.open_local(tmp_path / "a")
    alice = make_identity()
    from adapters.base import MemoryPatch, Status

    w = await base.remember(alice, "draft: rotate all keys", "note")
    await base.backend.update(ScopeKey.private("acme", "alice"), w.memory_id, MemoryPatch(status=Status.PENDING))
    leaky = MemoryBridge(StatusLeakingBackend(base.backend, ScopeKey.private("acme", "x")), SqliteState(tmp_path / "b.sqlite3"), reinitialise=True)
    result = await leaky.recall(alice, "rotate keys")
    assert w.memory_id not in {i.memory_id for i in result.items} and result.guard_alarms == 1
    await leaky.aclose()


async def test_audit_rows_are_filtered_by_user_not_by_the_ambiguous_display_principal(bridge, make_identity):
    """`alice` + agent `acme.com@chat` and `alice@acme.com` + agent `chat`
    share the display principal `acme/alice@acme.com@chat`; they must not share audit rows."""
    victim = make_identity("alice@acme.com", agent="chat")
    attacker = make_identity("alice", agent="acme.com@chat")
    assert victim.principal == attacker.principal
    w = await bridge.remember(victim, "victim's note", "note")
    assert await bridge.audit_events(attacker, memory_id=w.memory_id) == []
    assert [e.memory_ids for e in await bridge.audit_events(victim, memory_id=w.memory_id)] == [(w.memory_id,)]


async def test_refused_attempts_are_audited(bridge, make_identity):
    from identity.errors import SessionIdentityMismatch

    bob = make_identity("bob", departments=("sales",), workspace="beta")
    with pytest.raises(NotPermitted):
        await bridge.recall(bob, "reviewers", include_scopes=["acme/dept/eng"])
    await bridge.recall(make_identity(session="s-shared"), "x")
    with pytest.raises(SessionIdentityMismatch):
        await bridge.recall(make_identity("bob", session="s-shared"), "x")
    denied = await bridge.audit_events(make_identity("dave", roles=("admin",)), action="denied")
    assert [(e.actor, e.detail["operation"], e.detail["error"]) for e in reversed(denied)] == [
        ("acme/bob@assistant", "recall", "NotPermitted"),
        ("acme/bob@assistant", "recall", "SessionIdentityMismatch"),
    ]
