"""`viking-bridge demo multi-agent`: seed 002's phase-7 DAG over federated injection, checked.

intent -> ontology -> simulation verifier -> coder on the procurement Kafka-idempotency task,
with deterministic agent stubs (scenario.py; `--dry-run` as in the seed's own command: no
model). Per turn: the coordinator's `RoleInject` computes the role's manifest (printed as
counts per domain and tier), the child recalls with it, the stub answers from exactly what it
was given, and the result is written back with `derived_from` = the manifest's ids. The veto
queues its write-back and sends the ontology agent back for v2; only a pass triggers the
coder. At the end the run checks its own isolation claims and exits non-zero if any failed.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from adapters.scopes import ScopeKey
from bridge.doors.cli.demo import Checks
from bridge.errors import ManifestError, NotPermitted
from bridge.facade import MemoryBridge
from bridge.doors.cli import scenario as sc
from bridge.results import FederatedManifest
from bridge.roles.loader import load_roles
from bridge.roles.book import RoleBook
from identity.model import MemoryIdentity
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore
from identity.providers.base import ApiKey

__all__ = ["run_multiagent_demo", "PHASE7_ROLES"]

PHASE7_ROLES = Path(__file__).resolve().parents[3] / "examples" / "roles" / "phase7.toml"
COORDINATOR_SCOPE = "acme/agent/coordinator/li"  # where the federated memory lives (scenario.py)


@dataclass
class Run:
    bridge: MemoryBridge
    coordinator: MemoryIdentity
    agents: dict[str, MemoryIdentity]
    names: dict[str, str] = field(default_factory=dict)  # memory id -> node name / record label
    manifests: dict[str, list[FederatedManifest]] = field(default_factory=dict)
    records: list[tuple[str, str, tuple[str, ...], FederatedManifest]] = field(default_factory=list)  # label, id, derived_from, its manifest

    def label(self, memory_id: str) -> str:
        return self.names.get(memory_id, memory_id[:8])


def _counts(fm: FederatedManifest) -> str:
    return "; ".join(f"{d}: " + ", ".join(f"{t} {n}" for t, n in tiers.items()) for d, tiers in fm.counts().items())


async def _turn(run: Run, out: TextIO, agent: str, *, carry: tuple[tuple[ScopeKey, str], ...] = (), note: str = "") -> FederatedManifest:
    fm = await run.bridge.role_inject(run.coordinator, agent, sc.TASK, carry=carry)
    run.manifests.setdefault(agent, []).append(fm)
    seed = sc.SEED_COUNTS.get(agent)
    vs = f" (seed 002: {seed})" if seed is not None and len(run.manifests[agent]) == 1 else ""
    print(f"\n[{agent}]{note} manifest {fm.manifest.manifest_id[:8]}: {fm.plan.total} planned{vs}"
          f"{f' + {len(fm.carried)} carried' if fm.carried else ''}; depth {fm.depth.value}; route primary={fm.route.primary}"
          f" auxiliary={list(fm.route.auxiliary)}", file=out)
    print(f"   per domain/tier: {_counts(fm)}", file=out)
    print(f"   slots:           " + "; ".join(f"{d}: " + ", ".join(f"{t} {n}" for t, n in s.items()) for d, s in fm.plan.slots.items()), file=out)
    print(f"   来自注入清单 (from the manifest): {[run.label(i) for i in fm.memory_ids]}", file=out)
    return fm


async def _write_back(run: Run, out: TextIO, agent: str, fm: FederatedManifest, label: str, content: str) -> tuple[ScopeKey, str]:
    result = await run.bridge.write_back(run.agents[agent], fm.manifest.manifest_id, content, "decision")
    stored = await run.bridge.backend.get(ScopeKey.parse(result.scope), result.memory_id)
    run.names[result.memory_id] = label
    run.records.append((label, result.memory_id, stored.provenance.derived_from, fm))
    print(f"   write-back {label} -> {result.scope}: {content}", file=out)
    return ScopeKey.parse(result.scope), result.memory_id


async def _dag(run: Run, out: TextIO) -> bool:
    nodes = lambda fm: [{"metadata": {"node": run.label(i)}} for i in fm.memory_ids]  # noqa: E731  what the stub reads
    fm = await _turn(run, out, "intent")
    await _write_back(run, out, "intent", fm, "INTENT", sc.intent_stub(nodes(fm)).content)

    fm = await _turn(run, out, "ontology")
    v1 = await _write_back(run, out, "ontology", fm, "PROPOSAL-v1", sc.ontology_stub(nodes(fm), None).content)

    fm = await _turn(run, out, "simulation-verifier", carry=(v1,))
    verdict = sc.verifier_stub(nodes(fm), sc.ontology_stub(nodes(fm), None).content)
    veto = await _write_back(run, out, "simulation-verifier", fm, "VETO-v1", verdict.content)
    print("   [模拟验证] ✗ 否决 -> 排队写回 (veto queued; code generation NOT triggered; ontology retries)", file=out)

    fm = await _turn(run, out, "ontology", carry=(veto,), note=" retry")
    v2 = await _write_back(run, out, "ontology", fm, "PROPOSAL-v2", sc.ontology_stub(nodes(fm), verdict.content).content)
    print("   [本体] 修正为 keep_threshold_add_warning (v2)", file=out)

    fm = await _turn(run, out, "simulation-verifier", carry=(v2,), note=" re-check")
    verdict2 = sc.verifier_stub(nodes(fm), sc.ontology_stub(nodes(fm), verdict.content).content)
    await _write_back(run, out, "simulation-verifier", fm, "PASS-v2", verdict2.content)
    if not verdict2.passed:
        return False
    print("   [模拟验证] ✓ 通过 -> 触发代码生成 (code generation triggered)", file=out)

    fm = await _turn(run, out, "coder", carry=(v2,))
    await _write_back(run, out, "coder", fm, "CODE", sc.coder_stub(nodes(fm)).content)
    return verdict.passed is False and verdict2.passed is True


async def _claims(run: Run, checks: Checks, out: TextIO, private_id: str, noise_ids: set[str], cold_ids: set[str]) -> None:
    bridge, coord = run.bridge, run.coordinator
    first = {a: fms[0] for a, fms in run.manifests.items()}
    counts = {a: first[a].plan.total for a in sc.SEED_COUNTS}
    checks.check(f"manifest counts per role match seed 002's 3/8/3 (got {counts['intent']}/{counts['ontology']}/{counts['simulation-verifier']})", counts == sc.SEED_COUNTS)
    every = {i for fms in run.manifests.values() for fm in fms for i in fm.memory_ids}
    checks.check("the coordinator's private reasoning is in no manifest", private_id not in every)
    checks.check("another workspace's memory is in no manifest", not every & noise_ids)
    checks.check("cold-tier memories reach no phase-7 role (all read hot/warm)", not every & cold_ids)
    sim = first["simulation-verifier"]
    checks.check("the simulation verifier's plan holds only hot-tier purchasing memories", set(sim.counts()) == {"purchasing"} and set(sim.counts()["purchasing"]) == {"hot"})
    extra: list[str] = []  # of the coordinator's own memory, what a child saw beyond its manifest
    for agent, fms in run.manifests.items():
        for fm in fms:
            seen = await bridge.recall(run.agents[agent], sc.TASK, manifest_id=fm.manifest.manifest_id, purpose="coding", budget_tokens=20000)
            beyond = {i.memory_id for i in seen.items if i.scope == COORDINATOR_SCOPE or i.injected_by} - set(fm.memory_ids)
            extra += [f"{agent}: {run.label(i)}" for i in sorted(beyond)]
    checks.check("every child sees of the coordinator's agent memory only its own manifest", not extra, ", ".join(extra))
    plain = await bridge.recall(run.agents["ontology"], sc.TASK, purpose="coding", budget_tokens=20000)
    checks.check("without a manifest a child sees none of the coordinator's agent memory", not any(i.scope == COORDINATOR_SCOPE for i in plain.items))
    by_label = {label: (mid, derived) for label, mid, derived, _ in run.records}
    checks.check("every decision record carries derived_from = the ids of the manifest it was made from",
                 len(run.records) == 6 and all(derived == fm.memory_ids for _, _, derived, fm in run.records))
    checks.check("the veto is in the lineage of v2, v1 in the lineage of the veto", by_label["VETO-v1"][0] in by_label["PROPOSAL-v2"][1] and by_label["PROPOSAL-v1"][0] in by_label["VETO-v1"][1])
    checks.check("code generation ran once, after the pass and never after the veto", [a for a in run.manifests] == ["intent", "ontology", "simulation-verifier", "coder"] and len(run.manifests["coder"]) == 1)

    intent = run.agents["intent"]
    refusals = [
        ("a child cannot inject for itself", lambda: bridge.role_inject(intent, "intent", sc.TASK), ManifestError),
        ("a child the role file does not allow cannot inject into another agent", lambda: bridge.role_inject(intent, "coder", sc.TASK), NotPermitted),
        ("re-injection needs permission (the manifest's, which the role must allow)", lambda: bridge.inject(run.agents["ontology"], "coder", "pass it on", memory_refs=[(ScopeKey.parse("acme/agent/coordinator/li"), first["ontology"].memory_ids[0])], from_manifest_id=first["ontology"].manifest.manifest_id), NotPermitted),
        ("the coordinator cannot hand a child may_reinject its role forbids", lambda: bridge.role_inject(coord, "coder", sc.TASK, may_reinject=True), NotPermitted),
    ]
    injected_ref = next(r for r in first["ontology"].manifest.entries if r[0].visibility.value == "agent")
    refusals += [
        ("a child cannot forget an injected memory", lambda: bridge.forget(run.agents["ontology"], injected_ref), NotPermitted),
        ("a child cannot modify an injected memory", lambda: bridge.edit_memory(run.agents["ontology"], injected_ref, content="tampered"), NotPermitted),
    ]
    for name, attempt, error in refusals:
        try:
            await attempt()
            checks.check(name, False, "it was allowed")
        except error as exc:
            print(f"\n── refused: {name}: {type(exc).__name__}: {exc}", file=out)
            checks.check(name, True)
    team = await bridge.recall(run.agents["intent"], sc.TEAM_NOTE, budget_tokens=20000)
    checks.check("role-file team membership: a member agent reads team procurement's memory", any(i.scope == "acme/team/procurement" for i in team.items))
    outsider = run.agents["freelancer"]
    unseen = await bridge.recall(outsider, sc.TEAM_NOTE, budget_tokens=20000)
    checks.check("an agent outside the role file's team does not read its memory", not any(i.scope == "acme/team/procurement" for i in unseen.items))
    try:
        await bridge.remember(outsider, "freelancer: 改掉阈值", "decision", memory_type="team", team_id="procurement")
        checks.check("an agent outside the role file's team cannot write its memory", False, "it was allowed")
    except NotPermitted as exc:
        print(f"\n── refused: a non-member writes team memory: {exc}", file=out)
        checks.check("an agent outside the role file's team cannot write its memory", True)
    audit = await bridge.audit_events(coord, limit=500)
    denied = [e for e in audit if e.action == "denied"]
    refused = len(refusals) + 1  # + the non-member's team write; every agent acts for user li, whose rows li's agents read
    checks.check(f"every refusal ({refused}) is audited as denied", len(denied) == refused, "" if len(denied) == refused else f"{len(denied)} denied rows")
    checks.check("every role injection is audited with its route and counts", all("route" in (e.detail or {}) for e in audit if e.action == "inject"))


async def _world(bridge: MemoryBridge, keys: ApiKeyStore) -> tuple[MemoryIdentity, dict[str, MemoryIdentity], dict[str, str], str, set[str], set[str]]:
    provider = ApiKeyProvider(keys)

    async def login(agent: str, workspace: str = "procurement", user: str = "li") -> MemoryIdentity:
        return await provider.authenticate(ApiKey(keys.issue(tenant_id="acme", user_id=user, agent_id=agent, workspace_id=workspace).key))

    coordinator = await login("coordinator")
    agents = {a: await login(a) for a in (*sc.DAG, "freelancer")}  # freelancer: no role, in no team
    names: dict[str, str] = {}
    cold: set[str] = set()
    for node in sc.NODES:
        w = await bridge.remember(coordinator, node.content, node.kind, visibility=node.visibility, metadata=node.metadata())
        names[w.memory_id] = node.node
        if node.tier == "cold":
            cold.add(w.memory_id)
    await bridge.remember(coordinator, sc.TEAM_NOTE, "decision", memory_type="team", team_id="procurement")
    private = await bridge.remember(coordinator, sc.PRIVATE_NOTE, "note", visibility="agent")
    names[private.memory_id] = "PRIVATE"
    noise = set()
    for workspace, content, kind, meta in sc.NOISE:
        other = await login("coordinator", workspace=workspace, user="wang")
        noise.add((await bridge.remember(other, content, kind, visibility="workspace", metadata=meta)).memory_id)
    return coordinator, agents, names, private.memory_id, noise, cold


async def run_multiagent_demo(out: TextIO, roles_file: Path | None = None, home: Path | None = None) -> bool:
    roles: RoleBook = load_roles(roles_file or PHASE7_ROLES)
    with tempfile.TemporaryDirectory(prefix="viking-bridge-phase7-") as tmp:
        root = home or Path(tmp)
        bridge = MemoryBridge.open_local(root / "bridge", roles=roles)
        keys = ApiKeyStore(root / "keys.sqlite3")
        checks = Checks(out)
        try:
            print(f"viking-bridge demo multi-agent: seed 002 phase 7, roles from {roles.path} (--dry-run: deterministic stubs, no model)", file=out)
            print(f"task: {sc.TASK}", file=out)
            coordinator, agents, names, private, noise, cold = await _world(bridge, keys)
            run = Run(bridge, coordinator, agents, names)
            checks.check("the DAG ran veto -> queued write-back -> retry (v2) -> pass -> code generation", await _dag(run, out))
            print("\nDecision lineage (derived_from)", file=out)
            for label, mid, derived, _ in run.records:
                print(f"  {label:<12} {mid[:8]} <- {[run.label(i) for i in derived]}", file=out)
            await _claims(run, checks, out, private, noise, cold)
        finally:
            await bridge.aclose()
            keys.close()
    print("\nIsolation checks", file=out)
    for name, ok, detail in checks.results:
        print(f"  [{'PASS' if ok else 'FAIL'}] {name}{(' — ' + detail) if detail else ''}", file=out)
    print(f"\n{sum(ok for _, ok, _ in checks.results)}/{len(checks.results)} checks passed", file=out)
    return checks.passed
