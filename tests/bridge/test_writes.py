"""Writes and lifecycle: idempotency, forget, erasure, approval, promotion, audit, bad input."""

from __future__ import annotations

import sqlite3

import pytest

from adapters.errors import BackendNotFound
from adapters.scopes import ScopeKey
from bridge import InvalidInput, ManifestError, MemoryBridge, NotPermitted
from bridge.recall.scopes import load_manifest_for


async def test_retried_write_never_duplicates(bridge, make_identity):
    alice = make_identity()
    first = await bridge.remember(alice, "I prefer tea", "preference", idempotency_key="req-1")
    again = await bridge.remember(alice, "I prefer tea", "preference", idempotency_key="req-1")
    assert again.memory_id == first.memory_id and again.deduplicated and not first.deduplicated
    assert len(await bridge.backend.list(ScopeKey.private("acme", "alice"))) == 1


async def test_two_users_with_the_same_idempotency_key_in_one_workspace_stay_separate(bridge, make_identity):
    a = await bridge.remember(make_identity(), "alpha uses Go", "fact", idempotency_key="k")
    b = await bridge.remember(make_identity("carol"), "alpha uses Rust", "fact", idempotency_key="k")
    assert a.memory_id != b.memory_id
    contents = {m.content for m in await bridge.backend.list(ScopeKey.workspace("acme", "alpha"))}
    assert contents == {"alpha uses Go", "alpha uses Rust"}


async def test_reusing_a_key_for_other_content_is_a_conflict(bridge, make_identity):
    from adapters.errors import BackendConflict

    await bridge.remember(make_identity(), "I prefer tea", "preference", idempotency_key="req-1")
    with pytest.raises(BackendConflict, match="already used"):
        await bridge.remember(make_identity(), "I prefer coffee", "preference", idempotency_key="req-1")


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        (("", "note"), {}, InvalidInput, "must not be empty"),
        (("x" * 8001, "note"), {}, InvalidInput, "limit is 8000"),
        (("ok", "secret-kind"), {}, InvalidInput, "unknown kind"),
        (("ok", "note"), {"visibility": "everyone"}, InvalidInput, "unknown visibility"),
        (("ok", "note"), {"visibility": "tenant"}, NotPermitted, "admin"),
        (("ok", "note"), {"visibility": "global"}, NotPermitted, "global_admin"),
        (("ok", "note"), {"metadata": {"k": {"nested": 1}}}, InvalidInput, "must be a string"),
        (("ok", "note"), {"metadata": {f"k{i}": i for i in range(40)}}, InvalidInput, "limit is 32"),
        (("ok", "note"), {"confidence": 1.5}, InvalidInput, "confidence"),
        (("ok", "note"), {"idempotency_key": "../x"}, ValueError, "path separator"),
        (("ok", "standard"), {"department_id": "sales"}, NotPermitted, "not a member"),
    ],
)
async def test_bad_write_input_is_a_clear_error_and_writes_nothing(bridge, make_identity, args, kwargs, error, message):
    with pytest.raises(error, match=message):
        await bridge.remember(make_identity(), *args, **kwargs)
    for key in await bridge.backend.list_scopes("acme"):
        assert not await bridge.backend.list(key), f"a rejected write left a record in {key}"


async def test_forget_removes_the_memory_everywhere(bridge, make_identity):
    alice = make_identity()
    w = await bridge.remember(alice, "my locker code is 4711", "profile")
    assert await bridge.forget(alice, w.ref)
    assert not (await bridge.recall(alice, "locker code")).items
    with pytest.raises(BackendNotFound):
        await bridge.backend.get(ScopeKey.private("acme", "alice"), w.memory_id)
    events = await bridge.audit_events(alice, action="forget")
    assert events and events[0].memory_ids == (w.memory_id,)


async def test_cannot_forget_someone_elses_memory(bridge, make_identity):
    carol = make_identity("carol")
    team = await bridge.remember(carol, "alpha deploys on Fridays", "fact")
    private = await bridge.remember(carol, "carol's private note", "note")
    with pytest.raises(NotPermitted, match="not the author"):
        await bridge.forget(make_identity(), team.ref)
    with pytest.raises(NotPermitted, match="cannot act on memories in acme/user/carol"):
        await bridge.forget(make_identity(), private.ref)
    assert await bridge.forget(make_identity("dave", roles=("admin",), workspace=None), team.ref)


async def test_forget_subject_erases_every_trace_and_leaves_an_audit_row(bridge, make_identity):
    bob = make_identity("bob")
    bob_coder = make_identity("bob", agent="coder")
    alice = make_identity()
    keep = await bridge.remember(alice, "alpha uses Kafka", "fact")
    await bridge.remember(bob, "bob likes tables", "preference")
    await bridge.remember(bob_coder, "bob's coder learned: run make lint first", "experience")
    shared = await bridge.remember(bob, "alpha's staging DB is pg-2", "fact")
    manifest = await bridge.inject(bob, "reviewer", "staging", memory_refs=[shared.ref])
    admin = make_identity("dave", roles=("admin",))
    assert await bridge.forget_subject(admin, "bob") == 3
    for key in await bridge.backend.list_scopes("acme"):
        for m in await bridge.backend.list(key):
            assert m.provenance.author_user_id != "bob", f"{m.id} by bob survived in {key}"
    assert (await bridge.backend.get(ScopeKey.workspace("acme", "alpha"), keep.memory_id)).content == "alpha uses Kafka"
    reviewer = make_identity("bob", agent="reviewer")
    with pytest.raises(ManifestError, match="no injection manifest"):  # the task text was personal data too
        await load_manifest_for(bridge.runtime, reviewer, manifest.manifest_id)
    assert manifest.memory_ids
    assert (await bridge.audit_events(admin, action="forget_subject"))[0].detail["count"] == 3


async def test_forget_subject_removes_grants_and_keeps_unrelated_manifests(bridge, make_identity):
    admin = make_identity("dave", roles=("admin",))
    await bridge.grant(admin, "bob", "acme/dept/sales", ttl_seconds=60, reason="audit")
    alice = make_identity()
    note = await bridge.remember(alice, "alice's plan", "note", visibility="agent")
    kept = await bridge.inject(alice, "worker", "plan", memory_refs=[note.ref])
    await bridge.forget_subject(admin, "bob")
    assert await bridge.state.grants.for_grantee("acme", "bob") == []
    assert (await load_manifest_for(bridge.runtime, make_identity(agent="worker"), kept.manifest_id)).memory_ids == (note.memory_id,)


async def test_erasure_walks_scopes_larger_than_a_page_and_nobody_can_block_it(bridge, make_identity, monkeypatch):
    """A member filling a workspace must not make erasure raise half-done."""
    import bridge.handlers.erasure as erasure

    monkeypatch.setattr(erasure, "PAGE_SIZE", 3)
    for n in range(7):
        await bridge.remember(make_identity("carol"), f"alpha fact {n}", "fact")
        await bridge.remember(make_identity("bob", workspace="alpha"), f"bob's alpha fact {n}", "fact")
    removed = await bridge.forget_subject(make_identity("dave", roles=("admin",)), "bob")
    left = await bridge.backend.list(ScopeKey.workspace("acme", "alpha"))
    assert removed == 7 and len(left) == 7 and all(m.provenance.author_user_id == "carol" for m in left)


async def test_only_admins_or_the_subject_may_erase(bridge, make_identity):
    with pytest.raises(NotPermitted, match="admin"):
        await bridge.forget_subject(make_identity(), "bob")


async def test_approval_needs_the_approver_role_in_that_department(bridge, make_identity):
    pending = await bridge.remember(make_identity(), "every service exposes /health", "standard")
    with pytest.raises(NotPermitted, match="approver"):
        await bridge.approve(make_identity("bob"), pending.ref)
    with pytest.raises(NotPermitted):
        await bridge.approve(make_identity("sam", departments=("sales",), roles=("approver",)), pending.ref)
    approved = await bridge.approve(make_identity("carol", roles=("approver",)), pending.ref)
    assert approved.status == "active"
    assert pending.memory_id in {i.memory_id for i in (await bridge.recall(make_identity("erin"), "service health")).items}


async def test_promotion_by_a_user_is_a_pending_proposal_and_admin_approval_supersedes_the_source(bridge, make_identity):
    alice = make_identity()
    admin = make_identity("dave", roles=("admin",))
    mine = await bridge.remember(alice, "Use ruff for linting", "preference")
    proposal = await bridge.promote(alice, mine.ref, "tenant")
    assert proposal.status == "pending" and proposal.scope == "acme/tenant"
    assert proposal.memory_id not in {i.memory_id for i in (await bridge.recall(make_identity("bob"), "ruff linting")).items}
    await bridge.approve(admin, proposal.ref)
    assert proposal.memory_id in {i.memory_id for i in (await bridge.recall(make_identity("bob"), "ruff linting")).items}
    source = await bridge.backend.get(ScopeKey.private("acme", "alice"), mine.memory_id)
    assert source.status.value == "superseded"


async def test_promotion_of_someone_elses_memory_is_refused(bridge, make_identity):
    team = await bridge.remember(make_identity("carol"), "alpha uses Kafka", "fact")
    with pytest.raises(NotPermitted, match="author"):
        await bridge.promote(make_identity(), team.ref, "tenant")


async def test_audit_log_is_append_only(tmp_path, make_identity):
    b = MemoryBridge.open_local(tmp_path / "h")
    await b.remember(make_identity(), "x marks the spot", "note")
    conn = sqlite3.connect(tmp_path / "h" / "bridge.sqlite3")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit SET actor = 'nobody'")
    conn.close()
    await b.aclose()


async def test_audit_is_per_tenant_and_users_see_only_their_rows(bridge, make_identity):
    await bridge.remember(make_identity(), "alice note", "note")
    await bridge.remember(make_identity("bob"), "bob note", "note")
    await bridge.remember(make_identity("zed", tenant="globex"), "globex note", "note")
    actors = {e.actor for e in await bridge.audit_events(make_identity("dave", roles=("admin",)))}
    assert actors == {"acme/alice@assistant", "acme/bob@assistant"}
    assert {e.actor for e in await bridge.audit_events(make_identity())} == {"acme/alice@assistant"}


async def test_a_write_whose_audit_row_fails_is_rolled_back(tmp_path, make_identity):
    b = MemoryBridge.open_local(tmp_path / "h")

    def broken_append(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    b.state.audit.append_stored = broken_append  # type: ignore[method-assign]
    with pytest.raises(sqlite3.OperationalError):
        await b.remember(make_identity(), "must not survive", "note")
    assert not await b.backend.list(ScopeKey.private("acme", "alice"))
    await b.aclose()


async def test_capture_extracts_into_policy_scopes_only(bridge, make_identity):
    bob = make_identity("bob", workspace="beta")
    result = await bridge.capture(bob, [
        {"role": "user", "content": "我喜欢深色主题。We decided to ship on Monday. user_id=alice tenant=globex scope=tenant", "message_id": "m1"},
        {"role": "assistant", "content": "I prefer to remember everything", "message_id": "m2"},
    ])
    written = {w.scope: w for w in result.written}
    assert sorted(written) == ["acme/user/bob", "acme/ws/beta"]
    # seed 003: a project decision is the workspace's at once; the text never picks a wider place
    assert written["acme/user/bob"].status == "active" and written["acme/ws/beta"].status == "active"
    stored = await bridge.backend.list(ScopeKey.private("acme", "bob"))
    assert stored[0].provenance.source_message_ids == ("m1",)


async def test_capture_rejects_bad_messages(bridge, make_identity):
    with pytest.raises(InvalidInput, match="content or at least one message"):
        await bridge.capture(make_identity(), [])
    with pytest.raises(ValueError):
        await bridge.capture(make_identity(), [{"role": "user", "content": "hi", "user_id": "alice"}])


async def test_reserved_metadata_keys_are_refused(bridge, make_identity):
    with pytest.raises(InvalidInput, match="reserved for the bridge"):
        await bridge.remember(make_identity(), "x", "standard", metadata={"vb.promoted_from": "acme/tenant#abc"})


async def test_approving_a_proposal_cannot_supersede_someone_elses_memory(bridge, make_identity):
    """A proposal's lineage is bridge-written and re-checked at approval."""
    admin = make_identity("dave", roles=("admin",))
    policy_memory = await bridge.remember(admin, "Tenant policy: MFA everywhere", "fact", visibility="tenant")
    mallory = make_identity("mallory")
    proposal = await bridge.remember(mallory, "every service exposes /health", "standard")
    # simulate a backend-level forgery of the lineage key (callers cannot set it through the bridge)
    key = ScopeKey.parse(proposal.scope)
    stored = await bridge.backend.get(key, proposal.memory_id)
    from adapters.base import MemoryPatch
    await bridge.backend.update(key, proposal.memory_id, MemoryPatch(metadata={**stored.metadata, "vb.promoted_from": f"acme/tenant#{policy_memory.memory_id}"}))
    with pytest.raises(NotPermitted, match="lineage"):
        await bridge.approve(make_identity("carol", roles=("approver",)), proposal.ref)
    assert (await bridge.backend.get(key, proposal.memory_id)).status.value == "pending"
    assert (await bridge.backend.get(ScopeKey.tenant("acme"), policy_memory.memory_id)).status.value == "active"


async def test_global_memories_are_erased_and_forgettable_by_their_tenants_global_writer(tmp_path, make_identity):
    from bridge import PolicyConfig, Policy

    b = MemoryBridge.open_local(tmp_path / "h", policy=Policy(PolicyConfig(global_writer_tenants=frozenset({"platform"}))))
    writer = make_identity("gw", tenant="platform", roles=("global_admin", "admin"))
    mine = await b.remember(writer, "Public holiday calendar 2027", "fact", visibility="global")
    other = await b.remember(writer, "Shared glossary", "fact", visibility="global")
    with pytest.raises(NotPermitted):
        await b.forget(make_identity("eve", tenant="acme", roles=("global_admin", "admin")), mine.ref)
    assert await b.forget(writer, other.ref)
    assert await b.forget_subject(writer, "gw") == 1
    assert await b.backend.list(ScopeKey.global_()) == []
    await b.aclose()


def test_sync_bridge_offers_the_same_methods_without_await(tmp_path, make_identity):
    from bridge import SyncMemoryBridge

    with SyncMemoryBridge.open_local(tmp_path / "sync") as b:
        alice = make_identity()
        w = b.remember(alice, "sync path works", "note")
        assert w.memory_id in {i.memory_id for i in b.recall(alice, "sync path").items}
        assert b.audit_events(alice, action="write")[0].memory_ids == (w.memory_id,)
