"""A seeded multi-tenant bridge for the migration tests, and the view each identity has of it.

`seed` writes through the bridge (so records carry real provenance, statuses and lineage): two
tenants, private, agent, workspace, department and tenant scopes, a pending memory awaiting
approval, a direct promotion that superseded its source, a memory that expires, a child agent's
write-back derived from what its parent injected, and one record put straight into the store with
every provenance field the bridge itself leaves empty (source message ids, `injected_by`, a grant),
a subject, a confidence and metadata. `views` is what every seeded identity recalls and lists —
compared on the source and the target, it is the isolation oracle: a migration that moved a
record across a scope changes someone's view. `records` is every field of every memory, ids
replaced by the scope and content they name, so two stores with different ids compare equal exactly when
each memory arrived whole (content, kind, status, expiry, provenance, lineage, metadata).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from adapters.base import MemoryBackend, NewMemory, Provenance
from adapters.scopes import ScopeKey
from bridge.facade import MemoryBridge
from bridge.migrate.copy import COPIED_STATUSES
from bridge.writes import PROMOTED_FROM
from identity.model import MemoryIdentity

__all__ = ["Population", "seed", "views", "records", "TENANTS"]

TENANTS = ("acme", "globex")

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
    await bridge.remember(a, "Temporary: the staging canary is paused until the audit ends", "event", ttl_s=7200)
    rule = await bridge.remember(ids["root"], "Root draft: on-call handover happens at 09:00", "procedure")
    await bridge.promote(ids["root"], rule.ref, "tenant")  # an admin's promotion is direct: the draft is superseded
    await bridge.backend.put(ScopeKey.private("acme", "alice"), NewMemory(
        "Imported from chat: alice's canary alerts go to the pager", "fact",
        Provenance("alice", "importer", session_id="s-import", source_message_ids=("msg-1", "msg-2"), injected_by="planner",
                   derived_from=(injected.memory_id,), grant_id="g-import"),
        confidence=0.7, subject_user_id="alice", metadata={"origin": "chat-export", "turn": 3, "reviewed": True},
        created_at=time.time() - 86400, expires_at=time.time() + 30 * 86400,
    ), idempotency_key="kit-import")
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


async def records(backend: MemoryBackend, tenants: Sequence[str] = TENANTS) -> dict[str, dict[str, Any]]:
    """Every memory of `tenants` and the global scope (every status a migration copies), keyed
    by scope and content (unique in the seed; a promotion's copy lives in another scope), with every field a migration must carry; the ids a record
    holds (lineage, the promoted-from reference) are replaced by the content of the memory they
    name, so the stores' own ids drop out and a lost or wrong link shows."""
    found = []
    scopes = [k for t in tenants for k in await backend.list_scopes(t)] + [ScopeKey.global_()]
    for scope in scopes:
        cursor = None
        while True:
            page = await backend.list_page(scope, cursor=cursor, limit=200, statuses=COPIED_STATUSES)
            found += page.memories
            cursor = page.next_cursor
            if cursor is None:
                break
    content = {m.id: f"{m.scope}: {m.content}" for m in found}
    assert len(content) == len(set(content.values())), "the seed's contents are unique per scope; a store holds one twice"

    def named(memory_id: str) -> str:
        return content.get(memory_id, f"<unknown id {memory_id}>")

    out = {}
    for m in found:
        metadata = dict(m.metadata)
        if isinstance(metadata.get(PROMOTED_FROM), str):
            where, _, source_id = str(metadata[PROMOTED_FROM]).rpartition("#")
            metadata[PROMOTED_FROM] = f"{where}#{named(source_id)}"
        p = m.provenance
        out[content[m.id]] = {
            "scope": str(m.scope), "kind": m.kind, "status": m.status.value, "confidence": round(m.confidence, 6),
            "subject": m.subject_user_id, "metadata": metadata, "created_at": round(m.created_at, 3),
            "expires_at": None if m.expires_at is None else round(m.expires_at, 3),
            "author": (p.author_user_id, p.author_agent_id), "session": p.session_id, "messages": p.source_message_ids,
            "injected_by": p.injected_by, "grant": p.grant_id, "derived_from": tuple(named(i) for i in p.derived_from),
        }
    return out
