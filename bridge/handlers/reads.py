"""Handlers of the read API: get, list, the approval queue, edit, reject, grants, and
seed 000's inject-context.

Every permission is the policy's (`bridge/policy/__init__.py`, `bridge/policy/reads.py`); this module
fetches, asks, returns and audits. Reads are audited like recalls (`recall` rows naming
the memory ids, never content; the approval queue, an administrative view, as `inspect`); an edit is an `edit` row naming the fields changed, never their
values. A memory the caller may not see in a scope it may read is reported as absent
(`NotFound`), so a pending proposal's existence does not leak to readers of the scope. An
expired memory is absent too: `rt.backend` is the live view (adapters/live.py), for every handler.
"""

from __future__ import annotations



from adapters.base import MemoryPatch, Status, StoredMemory
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput, NotFound, NotPermitted
from bridge.handlers.injection import inject
from bridge.handlers.lifecycle import author_tenant
from bridge.results import InjectedContext, MemoryChange, MemoryHistory as HistoryResult, MemoryPage, MemoryRecord, RecalledMemory
from bridge.operations.reads import EditMemory, FindByKey, FindMemory, GetMemory, InjectContext, ListGrants, ListMemories, MemoryHistory, PendingApprovals, Reject
from bridge.policy.reads import HISTORY_HIDDEN_ACTIONS, approvable_scopes, approves_anything, default_read_scopes, grants_subject, may_edit, may_see_status, read_reason
from bridge.state.records import AuditView
from bridge.recall.render import render_context
from bridge.runtime import BridgeRuntime
from bridge.policy.sharing import SHAREABLE, narrowed_base, reads_team
from bridge.state.records import Grant
from bridge.operations.fields import RESERVED_METADATA_PREFIX
from bridge.policy.quotas import content_bytes
from bridge.writes import backend_key, release_memories, reserve_bytes
from identity.model import MemoryIdentity

__all__ = ["get_memory", "find_memory", "memory_history", "find_by_key", "list_memories", "pending_approvals", "edit_memory", "reject", "list_grants", "inject_context"]


async def _grants(rt: BridgeRuntime, identity: MemoryIdentity) -> list[Grant]:
    return list(await rt.state.grants.for_grantee(identity.tenant_id, identity.user_id))


async def _read_reason(rt: BridgeRuntime, identity: MemoryIdentity, key: ScopeKey, memory_id: str | None = None) -> str:
    """`read_reason`, plus what only the state can decide: a team the agent belongs to, and (for
    one memory by reference) a memory shared with this agent by visible_to."""
    if key.tenant_id == identity.tenant_id and key.visibility is Visibility.TEAM:
        teams = await rt.state.teams.teams_of(identity.tenant_id, identity.agent_id)
        if reads_team(identity, key, teams):
            return f"member of team {key.owner_id}"
        base = narrowed_base(key)
        if memory_id is not None and base in teams:  # narrowed team memory: exactly the listed ids
            if memory_id in (await rt.state.shares.shared_with(identity.tenant_id, identity.user_id, identity.agent_id)).get(key, ()):
                return f"team {base} memory visible to this agent (visible_to)"
    elif memory_id is not None and key.visibility in SHAREABLE and not rt.policy.is_own_scope(identity, key):
        if memory_id in (await rt.state.shares.shared_with(identity.tenant_id, identity.user_id, identity.agent_id)).get(key, ()):
            return f"shared by agent {key.owner_id} (visible_to)"
    return read_reason(rt.policy, identity, key, await _grants(rt, identity), rt.clock())


async def get_memory(rt: BridgeRuntime, identity: MemoryIdentity, op: GetMemory) -> MemoryRecord:
    key, memory_id = op.ref
    reason = await _read_reason(rt, identity, key, memory_id)
    memory = await rt.backend.get(key, memory_id)
    if not may_see_status(rt.policy, identity, key, memory.status, memory.provenance.author_user_id):
        raise NotFound(f"no memory {memory_id} in {key}")
    await rt.state.audit.append(identity, "recall", memory_ids=[memory_id], scopes=[key], detail={"operation": "get"})
    return MemoryRecord.of(memory, reason)


async def _default_scopes(rt: BridgeRuntime, identity: MemoryIdentity) -> list[tuple[ScopeKey, str]]:
    return default_read_scopes(rt.policy, identity, await rt.state.teams.teams_of(identity.tenant_id, identity.agent_id))


async def _find(rt: BridgeRuntime, identity: MemoryIdentity, memory_id: str) -> tuple[StoredMemory, str]:
    """The memory `memory_id` in one of the caller's default scopes, or `NotFound` — the same
    answer whether it exists nowhere or only where the caller may not read it."""
    for key, reason in await _default_scopes(rt, identity):
        try:
            memory = await rt.backend.get(key, memory_id)
        except NotFound:
            continue
        if memory.scope == key and may_see_status(rt.policy, identity, key, memory.status, memory.provenance.author_user_id):
            return memory, reason
    raise NotFound(f"no memory {memory_id} among the memories {identity.principal} may read")


async def find_memory(rt: BridgeRuntime, identity: MemoryIdentity, op: FindMemory) -> MemoryRecord:
    memory, reason = await _find(rt, identity, op.memory_id)
    await rt.state.audit.append(identity, "recall", memory_ids=[memory.id], scopes=[memory.scope], detail={"operation": "get"})
    return MemoryRecord.of(memory, reason)


async def memory_history(rt: BridgeRuntime, identity: MemoryIdentity, op: MemoryHistory) -> HistoryResult:
    """The changes to a memory the caller may read (checked exactly as get, by reference or by
    id alone), from the whole tenant's audit rows of that memory: a reader of a shared memory
    sees who else changed it. Reads of it are not changes and are left out."""
    if op.scope is None:
        memory, _ = await _find(rt, identity, op.memory_id)
    else:
        await _read_reason(rt, identity, op.scope, op.memory_id)
        memory = await rt.backend.get(op.scope, op.memory_id)
        if not may_see_status(rt.policy, identity, op.scope, memory.status, memory.provenance.author_user_id):
            raise NotFound(f"no memory {op.memory_id} in {op.scope}")
    scope = str(memory.scope)
    rows = await rt.state.audit.query(AuditView(identity.tenant_id, None), memory_id=memory.id, limit=op.limit * 4)
    changes = [
        MemoryChange(seq=e.seq, ts=e.ts, actor=e.actor, action=e.action, detail=e.detail)
        for e in rows if e.action not in HISTORY_HIDDEN_ACTIONS and (not e.scopes or scope in e.scopes)
    ][: op.limit]
    return HistoryResult(memory_id=memory.id, scope=scope, changes=tuple(changes))


async def find_by_key(rt: BridgeRuntime, identity: MemoryIdentity, op: FindByKey) -> MemoryRecord:
    """The caller's own memory stored with `op.key` in `op.scope` (what a write with that
    idempotency key stored, per writer), read-checked exactly as `get_memory`; else NotFound."""
    reason = read_reason(rt.policy, identity, op.scope, await _grants(rt, identity), rt.clock())
    memory = await rt.backend.find_by_idempotency_key(op.scope, backend_key(identity, op.scope, op.key, ""))
    if (memory is None or memory.scope != op.scope
            or not may_see_status(rt.policy, identity, op.scope, memory.status, memory.provenance.author_user_id)):
        raise NotFound(f"no memory with key {op.key!r} written by {identity.principal} in {op.scope}")
    await rt.state.audit.append(identity, "recall", memory_ids=[memory.id], scopes=[op.scope], detail={"operation": "find_by_key"})
    return MemoryRecord.of(memory, reason)


async def _scope_page(rt: BridgeRuntime, identity: MemoryIdentity, key: ScopeKey, status: Status, cursor: str | None, limit: int) -> tuple[list[StoredMemory], str | None]:
    page = await rt.backend.list_page(key, cursor=cursor, limit=limit, statuses=frozenset({status}))
    shown = [m for m in page.memories if m.scope == key and may_see_status(rt.policy, identity, key, m.status, m.provenance.author_user_id)]
    return shown, page.next_cursor


async def list_memories(rt: BridgeRuntime, identity: MemoryIdentity, op: ListMemories) -> MemoryPage:
    if op.scope is None:
        return await _list_all(rt, identity, op)
    reason = await _read_reason(rt, identity, op.scope)
    shown, next_cursor = await _scope_page(rt, identity, op.scope, Status(op.status), op.cursor, op.limit)
    await rt.state.audit.append(identity, "recall", memory_ids=[m.id for m in shown], scopes=[op.scope], detail={"operation": "list"})
    return MemoryPage(memories=tuple(MemoryRecord.of(m, reason) for m in shown), next_cursor=next_cursor)


async def _list_all(rt: BridgeRuntime, identity: MemoryIdentity, op: ListMemories) -> MemoryPage:
    """"All my memories": the default scopes one after another, a cursor `scope#inner` saying
    where the next page starts (a scope outside the default ones is refused, never read)."""
    scopes = await _default_scopes(rt, identity)
    names = [str(k) for k, _ in scopes]
    at, inner = _split_cursor(op.cursor)
    if at is not None and at not in names:
        raise InvalidInput("the cursor names a scope outside the memories this identity reads by default")
    start = 0 if at is None else names.index(at)
    out: list[MemoryRecord] = []
    next_cursor: str | None = None
    for n in range(start, len(scopes)):
        key, reason = scopes[n]
        shown, more = await _scope_page(rt, identity, key, Status(op.status), inner if n == start else None, op.limit - len(out))
        out.extend(MemoryRecord.of(m, reason) for m in shown)
        if more is not None:
            next_cursor = f"{key}#{more}"
            break
        if len(out) >= op.limit:
            next_cursor = f"{scopes[n + 1][0]}#" if n + 1 < len(scopes) else None
            break
    if out:
        await rt.state.audit.append(identity, "recall", memory_ids=[m.memory_id for m in out], scopes=sorted({ScopeKey.parse(m.scope) for m in out}, key=str), detail={"operation": "list"})
    return MemoryPage(memories=tuple(out), next_cursor=next_cursor)


def _split_cursor(cursor: str | None) -> tuple[str | None, str | None]:
    if cursor is None:
        return None, None
    scope, sep, inner = cursor.partition("#")
    if not sep:
        raise InvalidInput("not a cursor of this listing")
    return scope, inner or None


async def pending_approvals(rt: BridgeRuntime, identity: MemoryIdentity, op: PendingApprovals) -> MemoryPage:
    if not approves_anything(identity):
        raise NotPermitted(f"{identity.principal} approves no scope (needs the approver role for a department or workspace, or admin)")
    scopes = approvable_scopes(rt.policy, identity, await rt.backend.list_scopes(identity.tenant_id))
    at, inner = _split_cursor(op.cursor)
    names = [str(k) for k in scopes]
    if at is not None and at not in names:
        raise InvalidInput("the approval-queue cursor names a scope this identity does not approve")
    start = 0 if at is None else names.index(at)
    out: list[MemoryRecord] = []
    for n in range(start, len(scopes)):
        key = scopes[n]
        page = await rt.backend.list_page(key, cursor=inner if n == start else None, limit=op.limit - len(out), statuses=frozenset({Status.PENDING}))
        out.extend(MemoryRecord.of(m, f"awaiting approval in {key}") for m in page.memories if m.scope == key)
        if page.next_cursor is not None:
            return MemoryPage(memories=tuple(out), next_cursor=f"{key}#{page.next_cursor}")
        if len(out) >= op.limit:
            following = n + 1
            return MemoryPage(memories=tuple(out), next_cursor=f"{scopes[following]}#" if following < len(scopes) else None)
    if out:
        # the review queue is an administrative view (`inspect`), not a retrieval (`recall`)
        await rt.state.audit.append(identity, "inspect", memory_ids=[m.memory_id for m in out], scopes=sorted({ScopeKey.parse(m.scope) for m in out}, key=str), detail={"operation": "pending"})
    return MemoryPage(memories=tuple(out))


async def edit_memory(rt: BridgeRuntime, identity: MemoryIdentity, op: EditMemory) -> MemoryRecord:
    key, memory_id = op.ref
    if not rt.policy.may_fetch_for_change(identity, key):
        raise NotPermitted(f"{identity.principal} cannot act on memories in {key}")
    memory = await rt.backend.get(key, memory_id)
    if not may_edit(rt.policy, identity, key, memory.provenance.author_user_id, author_tenant(memory)):
        raise NotPermitted(f"{identity.principal} may not edit {key}#{memory_id}: not the author and not a tenant admin")
    merged = None
    if op.metadata is not None:  # the bridge's own keys survive an edit; the caller's are replaced
        merged = {**op.metadata, **{k: v for k, v in memory.metadata.items() if k.startswith(RESERVED_METADATA_PREFIX)}}
    grown = 0 if op.content is None else content_bytes(op.content) - content_bytes(memory.content)
    if grown > 0:  # a longer text takes quota bytes first (QuotaExceeded leaves the memory as it was)
        await reserve_bytes(rt, memory, grown)
    try:
        updated = await rt.backend.update(key, memory_id, MemoryPatch(content=op.content, metadata=merged, confidence=op.confidence))
    except BaseException:
        if grown > 0:
            await reserve_bytes(rt, memory, -grown)
        raise
    if grown < 0:
        await reserve_bytes(rt, memory, grown)
    fields = [name for name in ("content", "metadata", "confidence") if getattr(op, name) is not None]
    await rt.state.audit.append(identity, "edit", memory_ids=[memory_id], scopes=[key], detail={"fields": fields})
    return MemoryRecord.of(updated, "edited by its author or a tenant admin")


async def reject(rt: BridgeRuntime, identity: MemoryIdentity, op: Reject) -> bool:
    key, memory_id = op.ref
    if not rt.policy.may_approve(identity, key):
        raise NotPermitted(f"{identity.principal} may not reject memories in {key} (needs the approver role for that scope, or admin)")
    memory = await rt.backend.get(key, memory_id)
    if memory.status is not Status.PENDING:
        raise InvalidInput(f"memory {memory_id} is {memory.status.value}, not pending")
    intent = await rt.state.audit.begin_intent(identity, "reject", key, memory_id)  # a crash after the delete is still audited
    deleted = await rt.backend.delete(key, memory_id)
    await rt.state.manifests.purge_memory_ids({memory_id})
    await rt.state.audit.append(identity, "reject", memory_ids=[memory_id], scopes=[key], closes_intent=intent)
    if deleted:
        await release_memories(rt, [memory])
    return deleted


async def list_grants(rt: BridgeRuntime, identity: MemoryIdentity, op: ListGrants) -> list[Grant]:
    user = grants_subject(identity, op.grantee_user_id)
    now = rt.clock()
    grants = await rt.state.grants.for_grantee(identity.tenant_id, user)
    return [g for g in grants if g.tenant_id == identity.tenant_id and (op.include_inactive or g.active(now))]


async def inject_context(rt: BridgeRuntime, parent: MemoryIdentity, op: InjectContext) -> InjectedContext:
    manifest = await inject(rt, parent, op.inject)
    memories = [await rt.backend.get(key, memory_id) for key, memory_id in manifest.entries]
    label = f"injected by {manifest.issuer}"
    items = [
        RecalledMemory(
            memory_id=m.id, scope=str(m.scope), visibility=m.scope.visibility.value, kind=m.kind, content=m.content, score=1.0,
            why_visible=label, author=f"{m.provenance.author_user_id}@{m.provenance.author_agent_id}", status=m.status.value,
            grant_id=manifest.manifest_id, injected_by=manifest.issuer,
        )
        for m in memories
    ]
    child = f"{parent.tenant_id}/{parent.user_id}@{manifest.child_agent_id}"
    return InjectedContext(
        manifest_id=manifest.manifest_id, child_agent_id=manifest.child_agent_id, task=manifest.task, depth=manifest.depth.value,
        expires_at=manifest.expires_at, source=f"injected_by_{parent.agent_id}",
        memories=tuple(MemoryRecord.of(m, label) for m in memories), context=render_context(child, "chat", items),
        may_reinject=manifest.may_reinject, parent_manifest_id=manifest.parent_manifest_id, created_at=manifest.created_at,
    )
