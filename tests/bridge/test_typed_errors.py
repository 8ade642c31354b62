"""Every public method of `MemoryBridge` answers malformed input with a member
of the one error tree (`identity.errors.VikingBridgeError`), and a refused call writes nothing.

A hypothesis property per method: each example keeps most arguments valid (so the call reaches
deep into the handler) and replaces a random non-empty subset — any argument position, the
identity included — with an arbitrary value: None, booleans, integers (10**5000 too, which
Python refuses to turn into a string), floats (nan, inf), text with lone surrogates, bytes,
nested lists/dicts/tuples, values of random builtin types, plain objects, and strings that look
like scopes, ids or paths. The call must either return or raise a `VikingBridgeError`; when it
raised, the backend's scopes, the grants and the manifests must be exactly as before.
"""

from __future__ import annotations

import asyncio
import decimal
import os
import fractions
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from identity.errors import VikingBridgeError
from tests.kit import make_identity

EXAMPLES = int(os.environ.get("VIKING_BRIDGE_FUZZ_EXAMPLES", "50"))  # ~50 per method in CI; raise it locally to dig

ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=12)  # lone surrogates included
LOOKALIKES = st.sampled_from([
    "", " ", "acme/tenant", "globex/tenant", "global", "acme/user/bob", "../x", "a:b", "a/b", "admin", "tenant",
    "private", "chat", "x" * 5000, "\x00", "\ud800", "аlice", "ａｄｍｉｎ", "vb.promoted_from", "*", "None", "-1",
])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([1, -1]).map(lambda sign: sign * 10**5000), st.just(2**63),  # map: hypothesis cannot repr 10**5000
    st.floats(allow_nan=True, allow_infinity=True), ANY_TEXT, LOOKALIKES, st.binary(max_size=8),
    st.sampled_from([int, str, bytes, complex, decimal.Decimal, fractions.Fraction, frozenset, range]).flatmap(st.from_type),
    st.builds(object),
)
WEIRD = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.one_of(ANY_TEXT, LOOKALIKES, st.integers()), children, max_size=3),
    ),
    max_leaves=6,
)

ADMIN = make_identity("alice", roles=("admin", "approver"))
CHILD = make_identity("alice", agent="worker", roles=("admin", "approver"))


async def _setup(b: MemoryBridge) -> dict[str, Any]:
    note = await b.remember(ADMIN, "alpha's staging database is pg-2", "fact")
    mine = await b.remember(ADMIN, "I prefer tea", "preference")
    pending = await b.remember(make_identity("bob"), "every service exposes /health", "standard")
    manifest = await b.inject(ADMIN, "worker", "staging", memory_refs=[mine.ref], may_reinject=True)
    grant = await b.grant(ADMIN, "bob", "acme/dept/sales", ttl_seconds=600, reason="audit")
    proc = await b.remember(ADMIN, "deploy the canary before the fleet", "procedure")  # an agent memory: shareable
    return {"note": note, "mine": mine, "pending": pending, "manifest": manifest, "grant": grant, "proc": proc}


def _signatures(w: dict[str, Any]) -> dict[str, tuple[list[tuple[str, Any]], dict[str, Any]]]:
    """Per method: (positional (name, valid value) pairs, keyword valid values)."""
    ref, manifest_id = w["mine"].ref, w["manifest"].manifest_id
    return {
        "recall": ([("identity", ADMIN), ("query", "staging database")], {
            "purpose": "chat", "budget_tokens": 2000, "kinds": ["fact"], "include_scopes": [], "manifest_id": None,
            "allow_partial": False, "min_score": 0.1, "only_scopes": None}),
        "remember": ([("identity", ADMIN), ("content", "alpha deploys on Fridays"), ("kind", "fact")], {
            "visibility": "workspace", "department_id": None, "idempotency_key": "k-1", "metadata": {"source": "test"}, "confidence": 0.9,
            "ttl_s": 3600}),
        "capture": ([("identity", ADMIN), ("messages", [{"role": "user", "content": "I prefer green tea.", "message_id": "m1"}])], {"idempotency_key": "c-1", "ttl_s": 3600}),
        "forget": ([("identity", ADMIN), ("ref", w["note"].ref)], {}),
        "forget_subject": ([("identity", ADMIN), ("subject_user_id", "carol")], {}),
        "approve": ([("identity", ADMIN), ("ref", w["pending"].ref)], {}),
        "promote": ([("identity", ADMIN), ("ref", ref), ("to", "workspace")], {"department_id": None}),
        "grant": ([("admin", ADMIN), ("grantee_user_id", "carol"), ("scope", "acme/dept/sales")], {
            "ttl_seconds": 60, "reason": "incident review", "grantee_agent_id": None}),
        "revoke_grant": ([("admin", ADMIN), ("grant_id", w["grant"].grant_id)], {}),
        "inject": ([("parent", ADMIN), ("child_agent_id", "reviewer"), ("task", "staging")], {
            "depth": "minimal", "memory_refs": [ref], "from_manifest_id": None, "ttl_seconds": 60, "may_reinject": False}),
        "revoke_manifest": ([("identity", ADMIN), ("manifest_id", manifest_id)], {}),
        "write_back": ([("child", CHILD), ("manifest_id", manifest_id), ("content", "Result: pg-2 is healthy"), ("kind", "fact")], {
            "visibility": None, "idempotency_key": "wb-1"}),
        "audit_events": ([("identity", ADMIN)], {"action": "write", "memory_id": None, "limit": 10, "since_seq": 0}),
        "start_session": ([("identity", ADMIN)], {}),
        "fork_session": ([("identity", ADMIN), ("parent_session_id", ADMIN.session_id)], {}),
        # the read API
        "get_memory": ([("identity", ADMIN), ("ref", ref)], {}),
        "find_by_key": ([("identity", ADMIN), ("scope", "acme/ws/alpha"), ("key", "k-1")], {}),
        "list_memories": ([("identity", ADMIN), ("scope", "acme/ws/alpha")], {"cursor": None, "limit": 10, "status": "active"}),
        "pending_approvals": ([("identity", ADMIN)], {"cursor": None, "limit": 10}),
        "edit_memory": ([("identity", ADMIN), ("ref", ref)], {"content": "alpha deploys on Mondays", "metadata": None, "confidence": 0.8}),
        "reject": ([("identity", ADMIN), ("ref", w["pending"].ref)], {}),
        "list_grants": ([("identity", ADMIN)], {"grantee_user_id": None, "include_inactive": False}),
        "inject_context": ([("parent", ADMIN), ("child_agent_id", "reviewer"), ("task", "staging")], {"depth": "minimal"}),
        # sharing and teams
        "set_visible_to": ([("identity", ADMIN), ("ref", w["proc"].ref), ("visible_to", ["reviewer"])], {}),
        "set_team_members": ([("admin", ADMIN), ("team_id", "red"), ("agent_ids", ["assistant", "reviewer"])], {}),
        "add_team_member": ([("admin", ADMIN), ("team_id", "red"), ("member_agent_id", "worker")], {}),
        "remove_team_member": ([("admin", ADMIN), ("team_id", "red"), ("member_agent_id", "worker")], {}),
        # role files and federated injection
        "role_inject": ([("parent", ADMIN), ("child_agent_id", "reviewer"), ("task", "staging")], {
            "depth": "minimal", "carry": [ref], "ttl_seconds": 60, "may_reinject": False}),
        # expiry and quotas
        "purge_expired": ([("identity", ADMIN)], {"max_deletions": 10}),
    }


async def _snapshot(b: MemoryBridge) -> tuple:
    scopes = set(await b.backend.list_scopes("acme")) | {ScopeKey.global_()}
    records = {str(k): sorted((m.id, m.status.value, m.content) for m in await b.backend.list(k)) for k in scopes}
    db = b.state.db
    grants = db.query("SELECT grant_id, revoked_at FROM grants ORDER BY grant_id")
    manifests = db.query("SELECT manifest_id, revoked_at FROM manifests ORDER BY manifest_id")
    entries = db.query("SELECT manifest_id, position, memory_id FROM manifest_entries ORDER BY manifest_id, position")
    shares = db.query("SELECT scope, memory_id, agent_id FROM shares ORDER BY scope, memory_id, agent_id")
    teams = db.query("SELECT tenant_id, team_id, agent_id FROM team_members ORDER BY tenant_id, team_id, agent_id")
    return records, grants, manifests, entries, shares, teams


PUBLIC_METHODS = sorted(_signatures({"mine": type("W", (), {"ref": None})(), "note": type("W", (), {"ref": None})(),
                                     "pending": type("W", (), {"ref": None})(), "manifest": type("M", (), {"manifest_id": None})(),
                                     "grant": type("G", (), {"grant_id": None})(), "proc": type("W", (), {"ref": None})()}))


def test_every_public_method_is_covered():
    """A new public method of MemoryBridge must be added to the property test."""
    public = {n for n in dir(MemoryBridge) if not n.startswith("_") and callable(getattr(MemoryBridge, n))}
    # audit_refusal is the doors' hook (an identity the door verified, a refusal it made), not an API for input
    public -= {"execute", "aclose", "aopen", "open_local", "with_backend", "from_settings", "audit_refusal"}
    assert public == set(PUBLIC_METHODS), f"uncovered: {public - set(PUBLIC_METHODS)}; stale: {set(PUBLIC_METHODS) - public}"


@pytest.mark.parametrize("method", PUBLIC_METHODS)
def test_malformed_input_gives_only_typed_errors_and_writes_nothing(tmp_path, method):
    loop = asyncio.new_event_loop()
    b = MemoryBridge.open_local(tmp_path / "home")
    try:
        world = loop.run_until_complete(_setup(b))
        positional, keywords = _signatures(world)[method]
        names = [n for n, _ in positional] + list(keywords)

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            fuzzed = data.draw(st.sets(st.sampled_from(names), min_size=1, max_size=min(3, len(names))), label="fuzzed")
            values = {n: (data.draw(WEIRD, label=n) if n in fuzzed else v) for n, v in [*positional, *keywords.items()]}
            args = [values[n] for n, _ in positional]
            kwargs = {n: values[n] for n in keywords}
            before = loop.run_until_complete(_snapshot(b))
            try:
                loop.run_until_complete(getattr(b, method)(*args, **kwargs))
            except VikingBridgeError:
                after = loop.run_until_complete(_snapshot(b))
                assert after == before, f"{method} refused {sorted(fuzzed)} but changed the stores"
            except BaseException as exc:  # noqa: BLE001 - the property: nothing untyped escapes
                raise AssertionError(
                    f"{method}({', '.join(f'{n}=<{type(values[n]).__name__}>' for n in sorted(fuzzed))}) raised an untyped "
                    f"{type(exc).__module__}.{type(exc).__qualname__}: {str(exc)[:200]}"
                ) from exc

        run()
    finally:
        loop.run_until_complete(b.aclose())
        loop.close()


def test_execute_refuses_anything_that_is_not_an_operation_or_an_identity(tmp_path):
    """The door-level entry point: `execute(identity, op)` with arbitrary values in either
    position raises only `InvalidInput`-family errors and writes nothing."""
    from bridge import InvalidInput
    from bridge.operations import Operation

    loop = asyncio.new_event_loop()
    b = MemoryBridge.open_local(tmp_path / "home")
    try:
        before = loop.run_until_complete(_snapshot(b))

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(identity=st.one_of(st.just(ADMIN), WEIRD), op=st.one_of(WEIRD, st.builds(Operation)))
        def run(identity: Any, op: Any) -> None:
            with pytest.raises(InvalidInput):
                loop.run_until_complete(b.execute(identity, op))

        run()
        assert loop.run_until_complete(_snapshot(b)) == before
    finally:
        loop.run_until_complete(b.aclose())
        loop.close()


@pytest.mark.parametrize("bounds", [{"since_seq": 2**63}, {"since_seq": 2**62 + 1}, {"before_seq": 2**64}, {"before_seq": 0}, {"since_seq": -1}])
def test_an_audit_seq_beyond_any_store_is_refused_as_bad_input_not_a_database_overflow(bounds):
    """Found by the fuzzing above: `since_seq` of 5,000 digits reached SQLite as an OverflowError.
    Every store keeps seqs in 64-bit integers; the operation refuses what none can hold."""
    from bridge.operations import QueryAudit
    from bridge.errors import InvalidInput
    from bridge.operations.audit import MAX_SEQ

    with pytest.raises(InvalidInput):
        QueryAudit(**bounds)
    assert QueryAudit(since_seq=MAX_SEQ, before_seq=MAX_SEQ).since_seq == MAX_SEQ
