"""A seeded multi-tenant bridge for the migration tests, and the view each identity has of it.

`seed` writes through the bridge (so records carry real provenance, statuses and lineage): two
tenants, private, agent, workspace, department and tenant scopes, a pending memory awaiting
approval, and a child agent's write-back derived from what its parent injected. `views` is what
every seeded identity recalls and lists — compared on the source and the target, it is the
isolation oracle: a migration that moved a record across a scope changes someone's view.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.facade import MemoryBridge
from identity.model import MemoryIdentity

__all__ = ["Population", "seed", "views"]

QUERIES = ("deployment runbook canary", "coffee preference morning", "quarterly revenue forecast", "incident review standard")


@dataclass
class Population:
    identities: dict[str, MemoryIdentity]
    lineage: tuple[str, str]  # (write-back memory id, the injected parent's id)


def _who(tenant: str, user: str, agent: str = "assistant", **kw: object) -> MemoryIdentity:
    return MemoryIdentity(tenant_id=tenant, user_id=user, agent_id=agent, session_id=f"s-{tenant}-{user}-{agent}", **kw)  # type: ignore[arg-type]


async def seed(bridge: MemoryBridge) -> Population:
    ids = {
        "alice": _who("acme", "alice", workspace_id="alpha"),
        "alice-researcher": _who("acme", "alice", "researcher", workspace_id="alpha"),
        "bob": _who("acme", "bob", workspace_id="alpha"),
        "erin": _who("acme", "erin", department_ids=frozenset({"eng"}), roles=frozenset({"approver"})),
        "carol": _who("acme", "carol", department_ids=frozenset({"sales"})),
        "root": _who("acme", "root", roles=frozenset({"admin"})),
        "gina": _who("globex", "gina", workspace_id="alpha"),
    }
    a, b, g = ids["alice"], ids["bob"], ids["gina"]
    await bridge.remember(a, "I prefer oat milk in my morning coffee", "preference")
    await bridge.remember(b, "I prefer black coffee, no sugar, in the morning", "preference")
    await bridge.remember(g, "Globex secret: my morning coffee preference is espresso", "preference")
    await bridge.remember(a, "Workspace alpha decision: deployments drain the canary first", "decision", visibility="workspace")
    await bridge.remember(g, "Globex workspace alpha: quarterly revenue forecast is confidential", "decision", visibility="workspace")
    await bridge.remember(ids["erin"], "Engineering standard: incident reviews are blameless", "standard", visibility="department", department_id="eng")
    await bridge.remember(ids["carol"], "Sales quarterly revenue forecast: 12% growth", "fact", visibility="department", department_id="sales")
    await bridge.remember(ids["root"], "Company standard: every incident review is published", "standard", visibility="tenant")
    note = await bridge.remember(b, "Note from bob: quarterly revenue forecast meeting on Friday", "note")
    await bridge.promote(b, note.ref, "tenant")  # a proposal: pending until an admin approves it
    for n in range(12):
        await bridge.remember(a, f"Deployment runbook step {n}: check the canary dashboard before promotion", "procedure", visibility="agent")
    injected = await bridge.remember(a, "Deployment runbook: drain the canary before the database migration", "procedure", visibility="agent")
    manifest = await bridge.inject(a, "researcher", "prepare the deployment", memory_refs=[injected.ref])
    derived = await bridge.write_back(ids["alice-researcher"], manifest.manifest_id, "Finding: the canary drain takes 4 minutes", "fact")
    return Population(ids, (derived.memory_id, injected.memory_id))


async def views(bridge: MemoryBridge, population: Population) -> dict[str, list[tuple[str, ...]]]:
    """Per identity: the sorted (scope, content) pairs its recalls return, over several queries."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for name, identity in population.identities.items():
        seen: set[tuple[str, ...]] = set()
        for query in QUERIES:
            result = await bridge.recall(identity, query, budget_tokens=20000)
            seen.update((item.scope, item.content) for item in result.items)
        out[name] = sorted(seen)
    return out
