"""Handlers of the admin console's operations: tenant grants, live manifests,
per-scope counts, and who can read a memory.

Every permission is the policy's (`bridge/policy/reads.py`: `require_tenant_admin`,
`may_inspect`, `readers_of`); this module fetches, asks and returns. The tenant is always the
caller's own: every store call names `identity.tenant_id`, never a value from the request. No
answer carries memory content (the approval queue, which does, is `reads.pending_approvals`);
looking into one memory's readers is audited like a read (a `recall` row naming its id).
"""

from __future__ import annotations


from adapters.base import Status
from adapters.scopes import Visibility
from bridge.operations.admin import ScopeCounts, TenantGrants, TenantManifests, WhoCanRead
from bridge.policy.reads import may_inspect, readers_of, require_tenant_admin
from bridge.results import ManifestSummary, MemoryReaders, ReaderOut, ScopeCount
from bridge.runtime import BridgeRuntime
from bridge.state.records import Grant, InjectionManifest
from identity.model import MemoryIdentity

__all__ = ["tenant_grants", "tenant_manifests", "scope_counts", "who_can_read"]

#: Counting stops here per scope (and says so): an admin page must not walk a huge scope twice a second.
COUNT_CAP = 100_000
#: How many grants / manifests "who can read" weighs; beyond that the answer says it is incomplete.
READER_SOURCES_CAP = 10_000


async def tenant_grants(rt: BridgeRuntime, identity: MemoryIdentity, op: TenantGrants) -> list[Grant]:
    require_tenant_admin(identity, "listing the grants of the tenant")
    now = rt.clock()
    grants = await rt.state.grants.for_tenant(identity.tenant_id, limit=op.limit)
    return [g for g in grants if g.tenant_id == identity.tenant_id and (op.include_inactive or g.active(now))]


async def _chain_live(rt: BridgeRuntime, m: InjectionManifest, now: float) -> tuple[list[InjectionManifest], bool]:
    chain = await rt.state.manifests.chain(m)
    links = (m, *chain)
    return chain, all(x.usable(now) for x in links) and links[-1].parent_manifest_id is None


async def tenant_manifests(rt: BridgeRuntime, identity: MemoryIdentity, op: TenantManifests) -> list[ManifestSummary]:
    require_tenant_admin(identity, "listing the manifests of the tenant")
    now = rt.clock()
    out: list[ManifestSummary] = []
    for m in await rt.state.manifests.live_for_tenant(identity.tenant_id, now, limit=op.limit):
        if m.tenant_id != identity.tenant_id:
            continue
        _, live = await _chain_live(rt, m, now)
        out.append(ManifestSummary(
            manifest_id=m.manifest_id, user_id=m.user_id, parent_agent_id=m.parent_agent_id, child_agent_id=m.child_agent_id, issuer=m.issuer,
            task=m.task, depth=m.depth.value, memory_count=len(m.entries), memory_ids=m.memory_ids, may_reinject=m.may_reinject,
            parent_manifest_id=m.parent_manifest_id, created_at=m.created_at, expires_at=m.expires_at, chain_live=live,
        ))
    return out


async def scope_counts(rt: BridgeRuntime, identity: MemoryIdentity, op: ScopeCounts) -> list[ScopeCount]:
    require_tenant_admin(identity, "counting the memories of the tenant")
    out: list[ScopeCount] = []
    for key in sorted(await rt.backend.list_scopes(identity.tenant_id), key=str):
        if key.tenant_id != identity.tenant_id:  # the backend promises this; fail closed anyway
            continue
        counts = {s: 0 for s in Status}
        cursor, seen = None, 0
        while seen < COUNT_CAP:
            page = await rt.backend.list_page(key, cursor=cursor, limit=500)
            for m in page.memories:
                counts[m.status] += 1
            seen += len(page.memories)
            cursor = page.next_cursor
            if cursor is None:
                break
        out.append(ScopeCount(
            scope=str(key), visibility=key.visibility.value, active=counts[Status.ACTIVE], pending=counts[Status.PENDING],
            superseded=counts[Status.SUPERSEDED], capped=cursor is not None,
        ))
    return out


async def who_can_read(rt: BridgeRuntime, identity: MemoryIdentity, op: WhoCanRead) -> MemoryReaders:
    key, memory_id = op.ref
    may_inspect(identity, key)  # before the lookup: another tenant's ids are refused, not probed
    memory = await rt.backend.get(key, memory_id)
    now = rt.clock()
    grants = await rt.state.grants.for_tenant(identity.tenant_id, limit=READER_SOURCES_CAP)
    held = await rt.state.manifests.live_for_tenant(identity.tenant_id, now, memory_id=memory_id, limit=READER_SOURCES_CAP)
    manifests = [(m, (await _chain_live(rt, m, now))[0]) for m in held if m.tenant_id == identity.tenant_id]
    shared: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()
    if key.visibility in (Visibility.AGENT, Visibility.TASK):
        shared = (await rt.state.shares.audience_of(key, [memory_id])).get(memory_id, frozenset())
    if key.visibility is Visibility.TEAM and key.tenant_id == identity.tenant_id and key.owner_id is not None:
        members = await rt.state.teams.members(identity.tenant_id, key.owner_id)
    readers = readers_of(rt.policy, key, memory.status, memory.provenance.author_user_id, grants, manifests, now, shared_with=shared, team_members=members)
    # an admin looking into a memory is itself on the record (ids only, like every read)
    await rt.state.audit.append(identity, "recall", memory_ids=[memory_id], scopes=[key], detail={"operation": "who_can_read"})
    p = memory.provenance
    never = "nobody outside its audience" if key.tenant_id is None else "no identity of another tenant: cross-tenant reads are never allowed"
    return MemoryReaders(
        memory_id=memory.id, scope=str(key), visibility=key.visibility.value, kind=memory.kind, status=memory.status.value,
        author=f"{p.author_user_id}@{p.author_agent_id}", readers=tuple(ReaderOut.of(r) for r in readers), never=never,
        complete=len(grants) < READER_SOURCES_CAP and len(held) < READER_SOURCES_CAP,
    )
