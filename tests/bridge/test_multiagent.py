"""Injection manifests and write-back lineage (seeds 000 and 002)."""

from __future__ import annotations

import pytest

from adapters.scopes import ScopeKey
from bridge import ManifestError, NotPermitted


async def test_child_sees_exactly_the_injected_memories_read_only(bridge, make_identity):
    parent = make_identity(agent="orchestrator")
    child = make_identity(agent="worker")
    shared = await bridge.remember(parent, "internal: suspect the cache layer", "note", visibility="agent")
    hidden = await bridge.remember(parent, "internal: the user seems stressed", "note", visibility="agent")
    before = await bridge.recall(child, "internal cache stressed")
    assert not {i.memory_id for i in before.items} & {shared.memory_id, hidden.memory_id}
    manifest = await bridge.inject(parent, "worker", "fix the cache", memory_refs=[shared.ref])
    after = await bridge.recall(child, "internal cache stressed", manifest_id=manifest.manifest_id)
    seen = {i.memory_id: i for i in after.items}
    assert shared.memory_id in seen and hidden.memory_id not in seen
    assert seen[shared.memory_id].injected_by == "alice@orchestrator"
    with pytest.raises(NotPermitted):  # read-only for the child
        await bridge.forget(child, shared.ref)
    with pytest.raises(NotPermitted):
        await bridge.promote(child, shared.ref, "workspace")


async def test_manifest_is_bound_to_the_child(bridge, make_identity):
    parent = make_identity(agent="orchestrator")
    m = await bridge.remember(parent, "plan: split the migration", "note", visibility="agent")
    manifest = await bridge.inject(parent, "worker", "migration", memory_refs=[m.ref])
    with pytest.raises(ManifestError, match="no injection manifest"):
        await bridge.recall(make_identity(agent="other"), "migration", manifest_id=manifest.manifest_id)
    with pytest.raises(ManifestError, match="no injection manifest"):
        await bridge.recall(make_identity("bob", agent="worker"), "migration", manifest_id=manifest.manifest_id)


async def test_no_self_injection_and_no_reinjection_without_permission(bridge, make_identity):
    parent = make_identity(agent="orchestrator")
    child = make_identity(agent="worker")
    m = await bridge.remember(parent, "plan: split the migration", "note", visibility="agent")
    with pytest.raises(ManifestError, match="itself"):
        await bridge.inject(parent, "orchestrator", "x", memory_refs=[m.ref])
    manifest = await bridge.inject(parent, "worker", "migration", memory_refs=[m.ref])
    with pytest.raises(ManifestError, match="not readable through the parent's own scopes"):
        await bridge.inject(child, "grandchild", "x", memory_refs=[m.ref])
    with pytest.raises(ManifestError, match="does not allow re-injection"):
        await bridge.inject(child, "grandchild", "x", memory_refs=[m.ref], from_manifest_id=manifest.manifest_id)
    allowed = await bridge.inject(parent, "worker", "migration", memory_refs=[m.ref], may_reinject=True)
    again = await bridge.inject(child, "grandchild", "x", memory_refs=[m.ref], from_manifest_id=allowed.manifest_id)
    assert again.memory_ids == (m.memory_id,)


async def test_cannot_inject_what_the_parent_cannot_read(bridge, make_identity):
    bob_private = await bridge.remember(make_identity("bob"), "bob's secret", "note")
    with pytest.raises(ManifestError, match="not readable"):
        await bridge.inject(make_identity(agent="orchestrator"), "worker", "x", memory_refs=[bob_private.ref])


async def test_depth_search_injection_and_write_back_lineage(bridge, make_identity):
    parent = make_identity(agent="orchestrator")
    child = make_identity(agent="worker")
    for n in range(6):
        await bridge.remember(parent, f"kafka idempotent producer note {n}", "note", visibility="agent")
    minimal = await bridge.inject(parent, "worker", "kafka idempotent producer", depth="minimal")
    standard = await bridge.inject(parent, "worker", "kafka idempotent producer", depth="standard")
    assert len(minimal.memory_ids) == 3 and len(standard.memory_ids) == 6
    result = await bridge.write_back(child, minimal.manifest_id, "Decision: enable idempotence=true", "decision")
    stored = await bridge.backend.get(ScopeKey.parse(result.scope), result.memory_id)
    assert stored.provenance.derived_from == minimal.memory_ids
    assert stored.provenance.author_agent_id == "worker"
    with pytest.raises(ValueError, match="unknown depth"):
        await bridge.inject(parent, "worker", "x", depth="everything")


async def test_manifest_lifetime_is_bounded_and_reinjection_never_outlives_its_source(bridge, make_identity):
    """No infinite manifests, no re-injection chains that outlive the parent's."""
    parent = make_identity(agent="orchestrator")
    child = make_identity(agent="worker")
    m = await bridge.remember(parent, "plan: split the migration", "note", visibility="agent")
    for ttl in (0, -5, float("inf"), 10 * 86400):
        with pytest.raises(ValueError, match="ttl_seconds"):
            await bridge.inject(parent, "worker", "x", memory_refs=[m.ref], ttl_seconds=ttl)
    source = await bridge.inject(parent, "worker", "x", memory_refs=[m.ref], ttl_seconds=60, may_reinject=True)
    again = await bridge.inject(child, "tester", "x", memory_refs=[m.ref], from_manifest_id=source.manifest_id, ttl_seconds=7 * 86400, may_reinject=True)
    assert again.expires_at <= source.expires_at and not again.may_reinject
    tester = make_identity(agent="tester")
    with pytest.raises(ManifestError, match="does not allow re-injection"):
        await bridge.inject(tester, "deeper", "x", memory_refs=[m.ref], from_manifest_id=again.manifest_id)


async def test_revoked_manifest_stops_working(bridge, make_identity):
    parent = make_identity(agent="orchestrator")
    m = await bridge.remember(parent, "plan: split the migration", "note", visibility="agent")
    manifest = await bridge.inject(parent, "worker", "x", memory_refs=[m.ref])
    with pytest.raises(ManifestError):
        await bridge.revoke_manifest(make_identity(agent="worker"), manifest.manifest_id)
    await bridge.revoke_manifest(parent, manifest.manifest_id)
    with pytest.raises(ManifestError, match="expired"):
        await bridge.recall(make_identity(agent="worker"), "migration", manifest_id=manifest.manifest_id)


async def test_oversized_requests_are_refused_before_any_backend_call(bridge, make_identity):
    from bridge import InvalidInput

    parent = make_identity(agent="orchestrator")
    with pytest.raises(InvalidInput, match="limit is 200"):
        await bridge.inject(parent, "worker", "x", memory_refs=[("acme/user/alice", f"m{i}") for i in range(201)])
    with pytest.raises(InvalidInput, match="limit is 32"):
        await bridge.recall(parent, "x", include_scopes=[f"acme/dept/d{i}" for i in range(33)])
    with pytest.raises(ValueError):
        await bridge.capture(parent, [{"role": "user", "content": "I prefer tea", "message_id": "m" * 129}])
