"""Federated injection over a real local bridge: the role decides, the manifest enforces.

Seed 002's coordinator turn (`RoleInject`) and seed 000's depth semantics; only a parent the role
file permits may inject; a child never injects for itself; refusals are typed and audited.
"""

from __future__ import annotations

import pytest

from bridge.errors import ManifestError, RoleRefused
from bridge.facade import MemoryBridge
from bridge.roles.loader import load_roles, parse_roles
from bridge.doors.cli.demo_multiagent import PHASE7_ROLES
from tests.kit import make_identity

TASK = "采购订单 Kafka 消费幂等：供应商合同到期阈值校验"


@pytest.fixture
async def world(tmp_path):
    bridge = MemoryBridge.open_local(tmp_path / "home", roles=load_roles(PHASE7_ROLES))
    coord = make_identity("li", agent="coordinator", workspace="procurement")
    refs = {}
    for name, kind, domain, tier, vis in [
        ("hot-rule", "decision", "purchasing", "hot", "agent"), ("hot-fact", "fact", "purchasing", "hot", "agent"),
        ("warm-rule", "decision", "purchasing", "warm", "agent"), ("cold-rule", "decision", "purchasing", "cold", "agent"),
        ("arch", "decision", "code-arch", "hot", "agent"), ("project", "decision", "code-arch", "warm", "workspace"),
        ("unrelated-project", "decision", "purchasing", "warm", "workspace"),
    ]:
        text = f"{name}: 采购 供应商 阈值 Kafka 幂等" if name != "unrelated-project" else "午餐菜单：周五吃饺子"
        refs[name] = await bridge.remember(coord, text, kind, visibility=vis, metadata={"domain": domain, "tier": tier})
    # what the coordinator may NOT read: another user's private memory, another workspace
    await bridge.remember(make_identity("wang", agent="coordinator", workspace="procurement"), "wang 采购 阈值 private", "preference", metadata={"domain": "purchasing", "tier": "hot"})
    await bridge.remember(make_identity("li", agent="coordinator", workspace="logistics", session="s-logistics"), "logistics 采购 阈值 Kafka", "decision", metadata={"domain": "purchasing", "tier": "hot"})
    yield bridge, coord, refs
    await bridge.aclose()


def ids(fm):
    return set(fm.memory_ids)


async def test_a_role_injection_takes_only_the_roles_domains_tiers_and_kinds(world):
    bridge, coord, refs = world
    fm = await bridge.role_inject(coord, "simulation-verifier", TASK)
    assert fm.route.primary == "purchasing" and fm.depth.value == "minimal"
    assert ids(fm) == {refs["hot-rule"].memory_id, refs["hot-fact"].memory_id}  # hot purchasing only
    child = make_identity("li", agent="simulation-verifier", workspace="procurement")
    seen = await bridge.recall(child, TASK, manifest_id=fm.manifest.manifest_id, budget_tokens=20000)
    injected = {i.memory_id for i in seen.items if i.injected_by}
    assert injected == ids(fm) and all(i.injected_by == "li@coordinator" for i in seen.items if i.injected_by)


async def test_depth_minimal_standard_full_nest_and_never_reach_past_the_parent(world):
    bridge, coord, refs = world
    got = {d: ids(await bridge.role_inject(coord, "ontology", TASK, depth=d)) for d in ("minimal", "standard", "full")}
    assert got["minimal"] <= got["standard"] <= got["full"]
    assert refs["unrelated-project"].memory_id not in got["minimal"]  # not the task's
    assert refs["unrelated-project"].memory_id in got["standard"]  # project context
    assert refs["cold-rule"].memory_id not in got["full"]  # the role reads hot/warm
    readable = {r.memory_id for r in refs.values()}
    assert got["full"] <= readable  # nothing of wang's private memory or of another workspace


async def test_only_a_parent_the_roles_permit_may_inject_and_refusals_are_audited(world):
    bridge, coord, refs = world
    intent = make_identity("li", agent="intent", workspace="procurement")
    with pytest.raises(ManifestError):
        await bridge.role_inject(intent, "intent", TASK)  # a child never injects for itself
    with pytest.raises(RoleRefused, match="may not inject into 'coder'"):
        await bridge.role_inject(intent, "coder", TASK)
    with pytest.raises(RoleRefused, match="may not inject into 'coder'"):  # the plain Inject obeys the roles too
        await bridge.inject(intent, "coder", TASK, memory_refs=[refs["project"].ref])
    stranger = make_identity("li", agent="freelancer", workspace="procurement")
    with pytest.raises(RoleRefused, match="has no role"):
        await bridge.inject(stranger, "intent", TASK, memory_refs=[refs["project"].ref])
    with pytest.raises(RoleRefused, match="may not re-inject"):
        await bridge.role_inject(coord, "ontology", TASK, may_reinject=True)
    denied = [e for e in await bridge.audit_events(coord, action="denied", limit=50)]
    assert len(denied) == 5 and {e.detail["error"] for e in denied} == {"ManifestError", "RoleRefused"}
    rows = await bridge.audit_events(coord, action="inject", limit=50)
    assert rows == []  # nothing was injected by the refused attempts


async def test_re_injection_needs_the_roles_permission(tmp_path):
    data = load_roles(PHASE7_ROLES).roles.model_dump(mode="json")
    data["agents"]["ontology"]["may_reinject"] = True
    data["agents"]["ontology"]["may_inject_into"] = ["coder"]
    roles = parse_roles(data, "reinject.toml")
    bridge = MemoryBridge.open_local(tmp_path / "home", roles=roles)
    try:
        coord = make_identity("li", agent="coordinator", workspace="procurement")
        note = await bridge.remember(coord, "采购 阈值 Kafka 幂等 rule", "decision", visibility="agent", metadata={"domain": "purchasing", "tier": "hot"})
        ontology = make_identity("li", agent="ontology", workspace="procurement")
        first = await bridge.role_inject(coord, "ontology", TASK, may_reinject=True)
        onward = await bridge.inject(ontology, "coder", "pass it on", memory_refs=[note.ref], from_manifest_id=first.manifest.manifest_id)
        assert onward.memory_ids == (note.memory_id,)
        data["agents"]["ontology"]["may_reinject"] = False  # the same chain, a role that forbids it
        bridge.runtime.roles = parse_roles(data, "no-reinject.toml")
        with pytest.raises(RoleRefused, match="may not pass on injected memories"):
            await bridge.inject(ontology, "coder", "pass it on", memory_refs=[note.ref], from_manifest_id=first.manifest.manifest_id)
    finally:
        await bridge.aclose()


async def test_write_back_lands_only_in_the_roles_write_layers(world):
    bridge, coord, refs = world
    fm = await bridge.role_inject(coord, "intent", TASK)
    intent = make_identity("li", agent="intent", workspace="procurement")
    ok = await bridge.write_back(intent, fm.manifest.manifest_id, "意图：保持阈值", "decision")
    assert ok.visibility == "workspace"
    with pytest.raises(RoleRefused, match="write back into the agent layer"):
        await bridge.write_back(intent, fm.manifest.manifest_id, "intent's own note", "decision", visibility="agent")
    with pytest.raises(RoleRefused, match="may not write back a note"):
        await bridge.write_back(intent, fm.manifest.manifest_id, "a note", "note", visibility="workspace")


async def test_role_injection_without_a_role_file_is_refused(tmp_path):
    bridge = MemoryBridge.open_local(tmp_path / "home")
    try:
        with pytest.raises(RoleRefused, match="needs a role file"):
            await bridge.role_inject(make_identity("li", agent="coordinator"), "intent", TASK)
    finally:
        await bridge.aclose()
