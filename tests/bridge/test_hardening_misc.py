"""Refusals, capture counts and failed fan-outs in the bridge: the cases where a wrong answer
would look like success.

Every refusal is audited — `fork_session` and `audit_events` on another identity's session
raise `SessionIdentityMismatch` AND leave a `denied` row. `capture`'s `skipped` counts
messages that yielded nothing even without message ids; an idempotency conflict names the
caller's key, never the internal hashed one; a memory scoring 0.0 is never returned and
`min_score` raises the floor. A recall fails closed the same way whether one scope or the
whole fan-out failed — `RecallIncomplete` carrying the backend's reasons, audited as `denied`.
"""

from __future__ import annotations

import dataclasses

import pytest

from adapters.base import SearchResult
from adapters.errors import BackendConflict, BackendUnavailable
from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from bridge.errors import RecallIncomplete
from bridge.vocabulary import Purpose
from bridge.writes import backend_key
from identity.errors import SessionIdentityMismatch
from tests.kit import make_identity

ALICE = make_identity()
ADMIN = make_identity("dave", roles=("admin",))


async def _denied(b: MemoryBridge, operation: str) -> list:
    rows = await b.state.audit.query(b.policy.audit_view(ADMIN), action="denied")
    return [r for r in rows if r.detail.get("operation") == operation]


# -- every refusal is audited ----------------------------------------------------------------------


async def test_audit_query_on_another_identitys_session_is_refused_and_audited(bridge):
    await bridge.remember(make_identity(session="s-shared"), "alice's note", "note")  # binds s-shared to alice
    intruder = make_identity("bob", session="s-shared")
    with pytest.raises(SessionIdentityMismatch):
        await bridge.audit_events(intruder)
    (row,) = await _denied(bridge, "query_audit")
    assert row.actor == intruder.principal and row.detail["error"] == "SessionIdentityMismatch" and row.session_id == "s-shared"


@pytest.mark.parametrize("how", ["own-session-as-parent", "names-the-parent"])
async def test_fork_of_another_identitys_session_is_refused_and_audited(bridge, how):
    await bridge.start_session(make_identity(session="s-alice"))
    await bridge.remember(make_identity(session="s-alice"), "alice's note", "note")
    if how == "own-session-as-parent":
        intruder, parent = make_identity("bob", session="s-alice"), None
    else:
        intruder, parent = make_identity("bob", session="s-bob"), "s-alice"
    with pytest.raises(SessionIdentityMismatch):
        await bridge.fork_session(intruder, parent)
    (row,) = await _denied(bridge, "fork_session")
    assert row.actor == intruder.principal and row.detail["error"] == "SessionIdentityMismatch"


def _refusals(w: dict) -> dict[str, tuple]:
    """Per operation: (identity, method, args, kwargs) that the policy refuses."""
    member, bob = make_identity("mallory"), make_identity("bob")
    return {
        "recall": (member, "recall", ("sales numbers",), {"include_scopes": ["acme/dept/sales"]}),
        "remember": (member, "remember", ("tenant-wide claim", "fact"), {"visibility": "tenant"}),
        "forget": (member, "forget", (w["bob_note"].ref,), {}),
        "forget_subject": (member, "forget_subject", ("bob",), {}),
        "approve": (member, "approve", (w["pending"].ref,), {}),
        "promote": (member, "promote", (w["bob_note"].ref, "tenant"), {}),
        "issue_grant": (member, "grant", ("mallory", "acme/dept/sales"), {"ttl_seconds": 60, "reason": "curious"}),
        "revoke_grant": (member, "revoke_grant", (w["grant"].grant_id,), {}),
        "inject": (bob, "inject", ("assistant", "self"), {"memory_refs": [w["bob_note"].ref]}),
        "revoke_manifest": (member, "revoke_manifest", (w["manifest"].manifest_id,), {}),
        "write_back": (member, "write_back", (w["manifest"].manifest_id, "result", "fact"), {}),
    }


@pytest.fixture
async def refusal_world(bridge):
    bob = make_identity("bob")
    bob_note = await bridge.remember(bob, "alpha's staging DB is pg-2", "fact")
    pending = await bridge.remember(bob, "every service exposes /health", "standard")
    manifest = await bridge.inject(bob, "worker", "staging", memory_refs=[bob_note.ref])
    grant = await bridge.grant(ADMIN, "bob", "acme/dept/sales", ttl_seconds=60, reason="audit")
    return bridge, {"bob_note": bob_note, "pending": pending, "manifest": manifest, "grant": grant}


@pytest.mark.parametrize("operation", sorted(_refusals({k: type("X", (), {"ref": None, "grant_id": "g", "manifest_id": "m"})() for k in ("bob_note", "pending", "manifest", "grant")})))
async def test_every_policy_refusal_of_every_operation_is_audited(refusal_world, operation):
    """Whatever the operation, a refusal leaves a `denied` row
    naming the operation, the refused identity and the error."""
    from bridge import NotPermitted

    bridge, world = refusal_world
    who, method, args, kwargs = _refusals(world)[operation]
    with pytest.raises(NotPermitted):
        await getattr(bridge, method)(who, *args, **kwargs)
    rows = await _denied(bridge, operation)
    assert rows, f"refused {operation} by {who.principal} left no denied audit row"
    assert rows[0].actor == who.principal and rows[0].detail["error"]


@pytest.mark.parametrize("method, args", [
    ("recall", ("anything",)), ("remember", ("x", "note")), ("capture", ([{"role": "user", "content": "I prefer tea"}],)),
    ("forget", (("acme/user/alice", "m1"),)), ("forget_subject", ("alice",)), ("approve", (("acme/dept/eng", "m1"),)),
    ("promote", (("acme/user/alice", "m1"), "workspace")), ("revoke_manifest", ("m1",)), ("write_back", ("m1", "x", "fact")),
    ("inject", ("worker", "task")), ("audit_events", ()),
])
async def test_every_operation_on_another_identitys_session_is_refused_and_audited(bridge, method, args):
    """A session bound to alice refuses every operation by bob,
    each refusal audited, and nothing is written."""
    await bridge.recall(make_identity(session="s-alice"), "bind the session")  # first use binds s-alice to alice
    intruder = make_identity("bob", session="s-alice", roles=("admin",))
    with pytest.raises(SessionIdentityMismatch):
        await getattr(bridge, method)(intruder, *args)
    rows = [r for r in await bridge.state.audit.query(bridge.policy.audit_view(ADMIN), action="denied") if r.actor == intruder.principal]
    assert len(rows) == 1 and rows[0].detail["error"] == "SessionIdentityMismatch", f"{method} on a foreign session: {rows}"
    for key in await bridge.backend.list_scopes("acme"):
        assert not await bridge.backend.list(key), f"a refused {method} wrote into {key}"


# -- capture counts, conflicts, zero scores --------------------------------------------------------


async def test_capture_counts_skipped_messages_without_message_ids(bridge):
    result = await bridge.capture(ALICE, [
        {"role": "user", "content": "I prefer green tea in the morning."},
        {"role": "assistant", "content": "Hello there, how are you?"},
        {"role": "user", "content": "We decided to ship the release on Monday."},
        {"role": "assistant", "content": "Okay."},
    ])
    assert len(result.written) == 2, f"premise: two messages yield a memory, got {result.written}"
    assert result.skipped == 2, f"two of four messages yielded no memory, capture reported skipped={result.skipped}"


async def test_idempotency_conflict_names_the_callers_key_not_the_hashed_one(bridge):
    await bridge.remember(ALICE, "I prefer tea", "preference", idempotency_key="req-42")
    with pytest.raises(BackendConflict) as info:
        await bridge.remember(ALICE, "I prefer coffee", "preference", idempotency_key="req-42")
    internal = backend_key(ALICE, ScopeKey.private("acme", "alice"), "req-42", "preference|I prefer coffee")
    message = str(info.value)
    assert "req-42" in message, f"the conflict does not name the caller's key: {message}"
    assert internal not in message and "vb" + internal[2:12] not in message, f"the conflict leaks the internal key: {message}"


async def test_a_memory_scoring_zero_is_never_returned(bridge, monkeypatch):
    zero = await bridge.remember(ALICE, "orange bicycle festival", "note")
    real = await bridge.remember(ALICE, "database migration plan", "note")
    real_search = bridge.backend.search

    async def search(query):
        result = await real_search(query)
        hits = tuple(dataclasses.replace(h, score=0.0) if h.memory.id == zero.memory_id else h for h in result.hits)
        assert zero.memory_id in {h.memory.id for h in hits}, "premise: the backend returns the zero-score hit"
        return dataclasses.replace(result, hits=hits)

    monkeypatch.setattr(bridge.backend, "search", search)
    seen = {i.memory_id for i in (await bridge.recall(ALICE, "database migration plan orange bicycle festival")).items}
    assert zero.memory_id not in seen, "a memory with score 0.0 was returned"
    assert real.memory_id in seen


async def test_min_score_raises_the_relevance_floor(bridge):
    close = await bridge.remember(ALICE, "database migration plan for the billing service", "note")
    loose = await bridge.remember(ALICE, "billing service owner is carol", "note")
    query = "database migration plan for the billing service"
    items = {i.memory_id: i.score for i in (await bridge.recall(ALICE, query)).items}
    assert {close.memory_id, loose.memory_id} <= set(items) and items[close.memory_id] > items[loose.memory_id]
    floor = (items[close.memory_id] + items[loose.memory_id]) / 2
    raised = {i.memory_id for i in (await bridge.recall(ALICE, query, min_score=floor)).items}
    assert raised == {close.memory_id}, f"min_score={floor:.3f} should keep only the close match"


# -- a failed fan-out fails closed -----------------------------------------------------------------


async def test_whole_fanout_failure_is_recall_incomplete_with_reasons_and_audited(bridge, monkeypatch):
    await bridge.remember(ALICE, "alpha uses Kafka", "fact")

    async def down(query):
        raise BackendUnavailable("search endpoint returned 503", backend="local")

    monkeypatch.setattr(bridge.backend, "search", down)
    with pytest.raises(RecallIncomplete) as info:
        await bridge.recall(ALICE, "Kafka")
    assert any("503" in r for r in info.value.reasons), f"the backend's reason is lost: {info.value.reasons}"
    assert set(bridge.policy.readable_scopes(ALICE, Purpose.CHAT).keys) <= set(info.value.failed_scopes)
    (row,) = await _denied(bridge, "recall")
    assert row.detail["error"] == "RecallIncomplete" and row.actor == ALICE.principal


async def test_one_failed_scope_carries_its_failure_reasons(bridge, monkeypatch):
    await bridge.remember(ALICE, "alpha uses Kafka", "fact")
    real_search = bridge.backend.search
    workspace = ScopeKey.workspace("acme", "alpha")

    async def one_down(query):
        result = await real_search(query)
        hits = tuple(h for h in result.hits if h.scope != workspace)
        return SearchResult(hits, failed_scopes=(workspace,), failure_reasons=(f"{workspace}: read timeout",))

    monkeypatch.setattr(bridge.backend, "search", one_down)
    with pytest.raises(RecallIncomplete) as info:
        await bridge.recall(ALICE, "Kafka")
    assert info.value.reasons == (f"{workspace}: read timeout",) and tuple(info.value.failed_scopes) == (workspace,)
    assert (await _denied(bridge, "recall"))[0].detail["error"] == "RecallIncomplete"
    partial = await bridge.recall(ALICE, "Kafka", allow_partial=True)
    assert partial.partial and partial.failed_scopes == (str(workspace),)


@pytest.mark.parametrize("failure", ["whole-fanout", "one-scope"])
async def test_an_injection_by_search_fails_closed_like_a_recall(bridge, monkeypatch, failure):
    """A depth-based injection whose search
    failed (wholly or for one scope) raises RecallIncomplete with the reasons, audited, and
    makes no manifest from what happened to come back."""
    parent = make_identity(agent="orchestrator")
    await bridge.remember(parent, "kafka idempotent producer note", "note", visibility="agent")
    real_search = bridge.backend.search

    async def failing(query):
        if failure == "whole-fanout":
            raise BackendUnavailable("search endpoint returned 503", backend="local")
        result = await real_search(query)
        return SearchResult(result.hits, failed_scopes=(ScopeKey.workspace("acme", "alpha"),), failure_reasons=("acme/ws/alpha: read timeout",))

    monkeypatch.setattr(bridge.backend, "search", failing)
    with pytest.raises(RecallIncomplete) as info:
        await bridge.inject(parent, "worker", "kafka idempotent producer", depth="minimal")
    assert info.value.reasons and any(("503" in r) or ("timeout" in r) for r in info.value.reasons)
    assert (await _denied(bridge, "inject"))[0].detail["error"] == "RecallIncomplete"
    assert bridge.state.db.query("SELECT COUNT(*) FROM manifests")[0][0] == 0
