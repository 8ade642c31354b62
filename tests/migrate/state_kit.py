"""Bridge state worth carrying, written through the bridge, and the checks that it arrived.

`populate` gives each tenant a grant (and a revoked one), an injection manifest, a narrowed share
and a team with team memory; `check_target` asks the target bridge what each identity can do with
them — the child recalls through its manifest, the share's audience reads and the agent cut from
it does not, a team member reads team memory and a non-member does not — and `check_audit` finds
every source audit row on the target exactly once, memory ids through the id map.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bridge.facade import MemoryBridge
from bridge.operations import TenantGrants
from bridge.state.common import CARRIED
from bridge.state.protocols import BridgeState
from bridge.state.records import AuditRecord
from identity.model import MemoryIdentity

__all__ = ["Seeded", "populate", "check_target", "all_rows", "check_audit", "who"]


def who(tenant: str, user: str, agent: str = "assistant", **kw: object) -> MemoryIdentity:
    return MemoryIdentity(tenant_id=tenant, user_id=user, agent_id=agent, session_id=f"s-{tenant}-{user}-{agent}", **kw)  # type: ignore[arg-type]


@dataclass
class Tenant:
    tenant: str
    manifest_id: str = ""
    grant_ids: list[str] = field(default_factory=list)
    words: dict[str, str] = field(default_factory=dict)  # what: (query, content) joined by '|'


@dataclass
class Seeded:
    tenants: dict[str, Tenant]


async def _tenant(bridge: MemoryBridge, tenant: str) -> Tenant:
    out = Tenant(tenant)
    owner, child, root = who(tenant, "alice"), who(tenant, "alice", "researcher"), who(tenant, "root", roles=frozenset({"admin"}))
    secret = await bridge.remember(owner, f"{tenant} runbook: the zebra vault rotates on tuesdays", "procedure")
    manifest = await bridge.inject(owner, "researcher", "rotate the vault", memory_refs=[secret.ref])
    out.manifest_id = manifest.manifest_id
    out.words["manifest"] = f"zebra vault rotates|{tenant} runbook: the zebra vault rotates on tuesdays"
    shared = await bridge.remember(owner, f"{tenant} note: the kayak launch slips to friday", "fact", visible_to=["researcher", "coder"])
    await bridge.set_visible_to(owner, shared.ref, ["researcher"])  # narrowed: coder no longer reads it
    out.words["share"] = f"kayak launch friday|{tenant} note: the kayak launch slips to friday"
    await bridge.set_team_members(root, "red", ["researcher", "planner"])
    await bridge.remember(child, f"{tenant} team red: the walrus release ships in march", "decision", team_id="red")
    out.words["team"] = f"walrus release march|{tenant} team red: the walrus release ships in march"
    kept = await bridge.grant(root, "carol", f"{tenant}/dept/eng", ttl_seconds=3600, reason="incident review")
    gone = await bridge.grant(root, "dave", f"{tenant}/dept/eng", ttl_seconds=3600, reason="one-off")
    await bridge.revoke_grant(root, gone.grant_id)
    out.grant_ids = [kept.grant_id, gone.grant_id]
    return out


async def populate(bridge: MemoryBridge, tenants: tuple[str, ...] = ("acme",)) -> Seeded:
    return Seeded({t: await _tenant(bridge, t) for t in tenants})


async def _sees(bridge: MemoryBridge, identity: MemoryIdentity, words: str, **kw: object) -> bool:
    query, content = words.split("|")
    result = await bridge.recall(identity, query, budget_tokens=5000, **kw)  # type: ignore[arg-type]
    return content in [item.content for item in result.items]


async def check_target(bridge: MemoryBridge, seeded: Seeded) -> None:
    """What every identity can do on the target with the carried state (asserts)."""
    for tenant, t in seeded.tenants.items():
        child = who(tenant, "alice", "researcher")
        assert await _sees(bridge, child, t.words["manifest"], manifest_id=t.manifest_id), "the child recalls through its manifest"
        assert await _sees(bridge, child, t.words["share"]), "the share's audience still reads it"
        assert not await _sees(bridge, who(tenant, "alice", "coder"), t.words["share"]), "the agent cut from the share does not"
        assert await _sees(bridge, who(tenant, "bob", "planner"), t.words["team"]), "a team member reads team memory"
        assert not await _sees(bridge, who(tenant, "bob", "assistant"), t.words["team"]), "a non-member does not"
        listed = await bridge.execute(who(tenant, "root", roles=frozenset({"admin"})), TenantGrants(include_inactive=True))
        grants = {g.grant_id: g for g in listed}
        assert set(t.grant_ids) <= set(grants) and grants[t.grant_ids[1]].revoked_at is not None and grants[t.grant_ids[0]].revoked_at is None


async def all_rows(state: BridgeState, tenant: str) -> list[AuditRecord]:
    out: list[AuditRecord] = []
    while rows := await state.audit.export_rows(tenant, after_seq=out[-1].event.seq if out else 0, limit=1000):
        out += rows
    return out


async def check_audit(source: BridgeState, target: BridgeState, tenant: str, id_map: dict[str, str]) -> int:
    """Every source row of `tenant` is on the target once, remapped; returns how many rows."""
    mine = await all_rows(source, tenant)
    carried: dict[int, list[AuditRecord]] = {}
    for row in await all_rows(target, tenant):
        if CARRIED in row.event.detail:
            carried.setdefault(row.event.detail[CARRIED]["seq"], []).append(row)
    assert mine and len(carried) == len(mine)
    for row in mine:
        (copy,) = carried[row.event.seq]
        assert copy.event.memory_ids == tuple(id_map.get(m, m) for m in row.event.memory_ids)
        assert (copy.event.ts, copy.event.actor, copy.event.action, copy.event.scopes, copy.event.grant_ids, copy.user_id) == (
            row.event.ts, row.event.actor, row.event.action, row.event.scopes, row.event.grant_ids, row.user_id)
    assert any(id_map.get(m) for r in mine for m in r.event.memory_ids), "some rows name memories, and those are remapped"
    return len(mine)
