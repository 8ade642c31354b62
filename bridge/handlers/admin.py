"""Handlers of the admin console's operations: tenant grants, live manifests,
per-scope counts, who can read a memory, browsing a scope, and the tenant's directory.

Every permission is the policy's (`bridge/policy/reads.py`: `require_tenant_admin`,
`may_inspect`, `readers_of`); this module fetches, asks and returns. The tenant is always the
caller's own: every store call names `identity.tenant_id`, never a value from the request. Only
browsing carries memory content (audited as an `inspect` row naming the ids shown);
looking into one memory's readers is audited like a read, as an `inspect` row naming its id (an
administrative view is no `recall`: that action is an agent's retrieval, and a console left open
on a page must not fill the log with recalls nobody made).
"""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.base import Status
from adapters.scopes import Visibility
from bridge.operations.admin import BrowseMemories, ScopeCounts, TenantDirectory, TenantGrants, TenantManifests, WhoCanRead
from bridge.policy.reads import may_inspect, readers_of, require_tenant_admin
from bridge.results import (
    DirectoryTeam, DirectoryUser, ManifestSummary, MemoryPage, MemoryReaders, MemoryRecord, ReaderOut, ScopeCount, TenantDirectoryOut,
)
from bridge.runtime import BridgeRuntime
from bridge.state.records import Grant, InjectionManifest
from identity.model import MemoryIdentity

__all__ = ["tenant_grants", "tenant_manifests", "scope_counts", "who_can_read", "browse_memories", "tenant_directory"]

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
    await rt.state.audit.append(identity, "inspect", memory_ids=[memory_id], scopes=[key], detail={"operation": "who_can_read"})
    p = memory.provenance
    never = "nobody outside its audience" if key.tenant_id is None else "no identity of another tenant: cross-tenant reads are never allowed"
    return MemoryReaders(
        memory_id=memory.id, scope=str(key), visibility=key.visibility.value, kind=memory.kind, status=memory.status.value,
        author=f"{p.author_user_id}@{p.author_agent_id}", readers=tuple(ReaderOut.of(r) for r in readers), never=never,
        complete=len(grants) < READER_SOURCES_CAP and len(held) < READER_SOURCES_CAP,
    )


#: How many memories one browse request scans at most (a text search over a big scope pages on).
BROWSE_SCAN_CAP = 2_000
#: How many of the newest audit rows the directory reads its actors from.
DIRECTORY_AUDIT_ROWS = 1_000


async def browse_memories(rt: BridgeRuntime, identity: MemoryIdentity, op: BrowseMemories) -> MemoryPage:
    key = op.scope
    may_inspect(identity, key)  # tenant admin, own tenant: before anything is read
    statuses = frozenset({Status.ACTIVE, Status.PENDING, Status.SUPERSEDED}) if op.status is None else frozenset({Status(op.status)})
    needle = None if op.text is None else op.text.casefold()
    out: list[MemoryRecord] = []
    cursor, scanned = op.cursor, 0
    while True:
        # never ask for more than still fits: the cursor must resume right after the last memory weighed
        page = await rt.backend.list_page(key, cursor=cursor, limit=op.limit - len(out), statuses=statuses)
        scanned += len(page.memories)
        out.extend(
            MemoryRecord.of(m, "tenant admin view") for m in page.memories
            if m.scope == key and (needle is None or needle in m.content.casefold())
        )
        cursor = page.next_cursor
        if cursor is None or len(out) >= op.limit or scanned >= BROWSE_SCAN_CAP:
            break
    if out:  # content was shown: on the record, as an administrative view
        await rt.state.audit.append(identity, "inspect", memory_ids=[m.memory_id for m in out], scopes=[key], detail={"operation": "browse", "text": op.text is not None})
    return MemoryPage(memories=tuple(out), next_cursor=cursor)


async def tenant_directory(rt: BridgeRuntime, identity: MemoryIdentity, op: TenantDirectory) -> TenantDirectoryOut:
    require_tenant_admin(identity, "listing the users, agents and teams of the tenant")
    tenant = identity.tenant_id
    users: dict[str, dict[str, Any]] = {}

    def user(user_id: str) -> dict[str, Any]:
        return users.setdefault(user_id, {"agents": set(), "roles": set(), "departments": set(), "workspaces": set(), "keys": 0, "seen": None})

    if rt.api_keys is not None:
        for record in await asyncio.to_thread(rt.api_keys.records, tenant_id=tenant):  # blocking store: off the loop
            if record.tenant_id != tenant or record.revoked:
                continue
            u = user(record.user_id)
            u["agents"].add(record.agent_id)
            u["roles"] |= record.roles
            u["departments"] |= record.department_ids
            if record.workspace_id:
                u["workspaces"].add(record.workspace_id)
            u["keys"] += 1
    rows = await rt.state.audit.query(rt.policy.audit_view(identity), limit=DIRECTORY_AUDIT_ROWS)
    for row in rows:  # newest first: the first row of a user is its last sighting
        prefix, _, rest = row.actor.partition("/")
        user_id, at, agent_id = rest.partition("@")
        if row.tenant_id != tenant or prefix != tenant or not at or not user_id:
            continue
        u = user(user_id)
        u["agents"].add(agent_id)
        u["seen"] = u["seen"] or row.ts
    team_ids = {k.owner_id for k in await rt.backend.list_scopes(tenant) if k.visibility is Visibility.TEAM and k.tenant_id == tenant and k.owner_id}
    for agent in sorted({a for u in users.values() for a in u["agents"]}):
        team_ids |= await rt.state.teams.teams_of(tenant, agent)
    teams = [DirectoryTeam(team_id=t, members=tuple(sorted(await rt.state.teams.members(tenant, t)))) for t in sorted(team_ids)]
    return TenantDirectoryOut(
        users=tuple(
            DirectoryUser(
                user_id=uid, agents=tuple(sorted(u["agents"])), roles=tuple(sorted(u["roles"])), department_ids=tuple(sorted(u["departments"])),
                workspace_ids=tuple(sorted(u["workspaces"])), active_keys=u["keys"], last_seen=u["seen"],
            ) for uid, u in sorted(users.items())
        ),
        teams=tuple(teams), audit_rows_read=len(rows),
    )
