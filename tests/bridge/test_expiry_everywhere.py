"""An expired memory is gone on every path, and every copy keeps its expiry.

The rule is `StoredMemory.expired`; the one place that applies it to reads is the live view
(adapters/live.py), which the runtime hands every handler as `rt.backend`. The contract test
below walks the operation registry (`HANDLERS`): every operation either has a case here that
runs it in a world holding expired memories and finds none of them in its answer, or is listed
with the reason it reads no memory (or must see expired ones to remove them). An operation
added later without either fails the suite.
"""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path

import pytest

from adapters.errors import BackendNotFound
from adapters.scopes import ScopeKey, Visibility
from bridge import operations as ops
from bridge.errors import NotFound
from bridge.facade import MemoryBridge
from bridge.handlers import HANDLERS
from bridge.migrate.jsonl import export_jsonl, import_jsonl
from bridge.results import Message
from bridge.state.records import InjectDepth
from contract_tests.harness import Clock
from tests.kit import make_identity

MARK = "EXPIREDMARKER"
ALICE = make_identity("alice")
ADMIN = make_identity("root", roles=("admin", "approver"))
WS = ScopeKey.parse("acme/ws/alpha")

#: Operations that read no stored memory, or must see expired ones to remove them.
NO_MEMORY_READ = {
    ops.StartSession: "sessions only",
    ops.ForkSession: "sessions only",
    ops.IssueGrant: "writes a grant, reads no memory",
    ops.RevokeGrant: "grants only",
    ops.RevokeManifest: "manifests only",
    ops.QueryAudit: "audit rows name ids, never content",
    ops.ListGrants: "grants only",
    ops.TenantGrants: "grants only",
    ops.TenantManifests: "manifests only",
    ops.SetTeamMembers: "team membership only",
    ops.AddTeamMember: "team membership only",
    ops.RemoveTeamMember: "team membership only",
    ops.PurgeExpired: "reads the raw store on purpose: it deletes expired memories",
    ops.ForgetSubject: "reads the raw store on purpose: erasure removes expired personal data too",
    ops.IssueApiKey: "API keys only",
    ops.ListApiKeys: "API keys only",
    ops.RevokeApiKey: "API keys only",
    ops.TenantDirectory: "users, agents and teams: names, never memories",
}


PRIVATE: list = []  # the world's expired agent-private memory (the only kind visible_to applies to)


@pytest.fixture
async def world(tmp_path: Path):
    clock = Clock()
    bridge = MemoryBridge.open_local(tmp_path / "home", clock=clock)
    live = await bridge.remember(ALICE, "live deploy note: ship with make", "fact", visibility="workspace")
    gone = await bridge.remember(ALICE, f"{MARK} deploy secret: ship with make", "fact", visibility="workspace", ttl_s=60, idempotency_key="k1")
    proposal = await bridge.promote(ALICE, gone.ref, "tenant")  # a member's proposal: pending, and it expires with its source
    assert proposal.status == "pending" and proposal.expires_at == pytest.approx(gone.expires_at)
    private = await bridge.remember(ALICE, f"{MARK} my agent's note", "note", visibility="agent", ttl_s=60)
    PRIVATE[:] = [private]
    clock.advance(120)
    yield bridge, clock, live, gone, proposal
    await bridge.aclose()


def _ref(result):
    return ScopeKey.parse(result.scope), result.memory_id


async def _drain(value):
    if inspect.isasyncgen(value) or hasattr(value, "__aiter__"):
        return [m async for m in value]
    return value


def _cases(live, gone, proposal):
    """Operation type -> (identity, operation) run in the world above."""
    g, p = _ref(gone), _ref(proposal)
    return {
        ops.Recall: (ALICE, ops.Recall(query="deploy secret ship with make")),
        ops.Remember: (ALICE, ops.Remember(content="a new note", kind="fact", visibility=Visibility.WORKSPACE, idempotency_key="k1")),
        ops.Capture: (ALICE, ops.Capture(messages=(Message(role="user", content="remember that we deploy on Fridays"),))),
        ops.Forget: (ALICE, ops.Forget(ref=g)),
        ops.Approve: (ADMIN, ops.Approve(ref=p)),
        ops.Promote: (ADMIN, ops.Promote(ref=g, to=Visibility.TENANT)),
        ops.Inject: (ALICE, ops.Inject(child_agent_id="worker", task="deploy secret", memory_refs=(g,))),
        ops.WriteBack: None,  # needs a manifest: run in test_write_back_reads_no_expired_memory
        ops.RoleInject: None,  # needs a role file: test_role_inject_full_is_not_refused_by_an_expired_memory
        ops.GetMemory: (ALICE, ops.GetMemory(ref=g)),
        ops.FindByKey: (ALICE, ops.FindByKey(scope=WS, key="k1")),
        ops.ListMemories: (ALICE, ops.ListMemories(scope=WS)),
        ops.PendingApprovals: (ADMIN, ops.PendingApprovals()),
        ops.EditMemory: (ALICE, ops.EditMemory(ref=g, content="rewritten")),
        ops.Reject: (ADMIN, ops.Reject(ref=p)),
        ops.InjectContext: (ALICE, ops.InjectContext(inject=ops.Inject(child_agent_id="worker", task="deploy secret ship with make", depth=InjectDepth.FULL))),
        ops.ExportMemories: (ADMIN, ops.ExportMemories()),
        ops.SetVisibleTo: (ALICE, ops.SetVisibleTo(ref=_ref(PRIVATE[0]), visible_to=("worker",))),
        ops.ScopeCounts: (ADMIN, ops.ScopeCounts()),
        ops.WhoCanRead: (ADMIN, ops.WhoCanRead(ref=g)),
        ops.BrowseMemories: (ADMIN, ops.BrowseMemories(scope=WS, text="deploy")),
        ops.FindMemory: (ALICE, ops.FindMemory(memory_id=gone.memory_id)),
        ops.MemoryHistory: (ALICE, ops.MemoryHistory(memory_id=gone.memory_id)),
    }


async def test_every_operation_has_a_liveness_case_or_a_reason(world):
    bridge, _, live, gone, proposal = world
    cases = _cases(live, gone, proposal)
    assert {t for t, c in cases.items() if c is None} == OWN_TEST
    covered = set(cases) | set(NO_MEMORY_READ)
    assert set(HANDLERS) == covered, f"operations with no liveness case and no reason: {sorted(t.__name__ for t in set(HANDLERS) - covered)}"


#: Operations whose world needs more than the fixture's (a manifest, a role file): their own test below.
OWN_TEST = {ops.WriteBack, ops.RoleInject}


@pytest.mark.parametrize("name", sorted(t.__name__ for t in HANDLERS if t not in NO_MEMORY_READ and t not in OWN_TEST))
async def test_no_operation_answers_an_expired_memory(world, name):
    bridge, _, live, gone, proposal = world
    identity, op = {t.__name__: c for t, c in _cases(live, gone, proposal).items()}[name]
    try:
        answer = await _drain(await bridge.execute(identity, op))
    except (NotFound, BackendNotFound):
        return  # gone, exactly as a forgotten memory
    shown = repr(answer)
    assert MARK not in shown and gone.memory_id not in shown and proposal.memory_id not in shown and PRIVATE[0].memory_id not in shown, f"{name} answered an expired memory: {shown[:500]}"
    if name == "ScopeCounts":  # counted as present would be answering it too
        assert all(c.active <= 1 and c.pending == 0 for c in answer if c.scope in (str(WS), gone.scope, proposal.scope)), answer


async def test_write_back_reads_no_expired_memory(world):
    bridge, _, live, gone, _ = world
    manifest = await bridge.inject(ALICE, "worker", "deploy", memory_refs=[live.ref])
    child = make_identity("alice", agent="worker")
    result = await bridge.write_back(child, manifest.manifest_id, "worker found the deploy step", "fact")
    assert gone.memory_id not in repr(result)


async def test_a_promoted_copy_keeps_its_expiry_and_an_expired_source_is_not_promoted(world):
    bridge, clock, live, gone, _ = world
    ttl = await bridge.remember(ALICE, "rotate the staging keys", "fact", visibility="workspace", ttl_s=600)
    copy = await bridge.promote(ADMIN, ttl.ref, "tenant")
    assert copy.status == "active" and copy.expires_at == pytest.approx(ttl.expires_at)
    stored = await bridge.backend.get(ScopeKey.parse(copy.scope), copy.memory_id)
    assert stored.expires_at == pytest.approx(ttl.expires_at)
    with pytest.raises((NotFound, BackendNotFound)):
        await bridge.promote(ADMIN, gone.ref, "tenant")
    bob = make_identity("bob")
    seen = await bridge.recall(bob, "deploy secret ship with make")
    assert all(MARK not in i.content for i in seen.items)


async def test_export_leaves_expired_out_and_import_keeps_expiry(world, tmp_path):
    bridge, clock, live, gone, _ = world
    ttl = await bridge.remember(ALICE, "rotate the staging keys", "fact", visibility="workspace", ttl_s=600)
    out = io.StringIO()
    await export_jsonl(bridge, ADMIN, out, key=b"k" * 32)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    memories = {m["memory_id"]: m for m in lines if m.get("type") == "memory"}
    assert gone.memory_id not in memories and MARK not in out.getvalue()
    assert memories[ttl.memory_id]["expires_at"] == pytest.approx(ttl.expires_at)
    assert memories[live.memory_id]["expires_at"] is None
    target = MemoryBridge.open_local(tmp_path / "other", clock=clock)
    try:
        report = await import_jsonl(target, ADMIN, out.getvalue().splitlines(keepends=True), key=b"k" * 32)
        assert report.ok and report.written == len(memories)
        page = await target.list_memories(ADMIN, WS)
        by_content = {m.content: m for m in page.memories}
        assert by_content["rotate the staging keys"].expires_at == pytest.approx(ttl.expires_at)
        clock.advance(700)  # the imported copy expires when its source would have
        seen = await target.list_memories(ADMIN, WS)
        assert "rotate the staging keys" not in {m.content for m in seen.memories}
        again = await import_jsonl(target, ADMIN, out.getvalue().splitlines(keepends=True), key=b"k" * 32)
        assert again.ok and again.expired == 1 and again.written == 0  # expired by now: gone, not re-created
    finally:
        await target.aclose()


async def test_role_inject_full_is_not_refused_by_an_expired_memory(tmp_path):
    from bridge.doors.cli.demo_multiagent import PHASE7_ROLES
    from bridge.roles.loader import load_roles

    clock = Clock()
    bridge = MemoryBridge.open_local(tmp_path / "home", roles=load_roles(PHASE7_ROLES), clock=clock)
    try:
        coord = make_identity("li", agent="coordinator", workspace="procurement")
        kept = await bridge.remember(coord, "project: 采购 供应商 阈值 Kafka 幂等", "decision", visibility="workspace", metadata={"domain": "purchasing", "tier": "warm"})
        gone = await bridge.remember(coord, f"{MARK} 采购 供应商 阈值", "decision", visibility="workspace", metadata={"domain": "purchasing", "tier": "warm"}, ttl_s=60)
        clock.advance(120)
        fm = await bridge.role_inject(coord, "ontology", "采购订单 Kafka 消费幂等：供应商合同到期阈值校验", depth="full")
        assert kept.memory_id in set(fm.memory_ids) and gone.memory_id not in set(fm.memory_ids)
    finally:
        await bridge.aclose()


async def test_migrate_copies_no_expired_memory_and_keeps_every_expiry(world, tmp_path):
    from adapters.local import LocalBackend
    from bridge.migrate.copy import copy_memories, scopes_of
    from bridge.migrate.verify import verify

    bridge, clock, live, gone, _ = world
    ttl = await bridge.remember(ALICE, "rotate the staging keys", "fact", visibility="workspace", ttl_s=3600)
    source = bridge.backend
    target = LocalBackend(tmp_path / "target-store")
    try:
        scopes = await scopes_of(source, ["acme"], True)
        report = await copy_memories(source, target, scopes, now=clock.now)
        assert gone.memory_id not in report.id_map and ttl.memory_id in report.id_map
        copy = await target.get(WS, report.id_map[ttl.memory_id])
        assert copy.expires_at == pytest.approx(ttl.expires_at)
        assert (await verify(source, target, scopes, now=clock.now)).ok
    finally:
        await target.aclose()


def test_handlers_read_through_the_live_view():
    """Only the paths that must see expired records to remove them touch the raw store."""
    allowed = {"expiry.py", "erasure.py"}
    root = Path(__file__).resolve().parents[2] / "bridge"
    offenders = [
        str(p.relative_to(root)) for folder in ("handlers", "roles", "policy") for p in (root / folder).rglob("*.py")
        if "rt.store" in p.read_text() and p.name not in allowed
    ]
    offenders += [str(p.relative_to(root)) for p in (root / "recall").rglob("*.py") if "rt.store" in p.read_text() and p.name != "search.py"]
    assert not offenders, offenders
