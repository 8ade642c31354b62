"""Handlers that change existing memories: forget, approve, promote.

Every permission is the policy's; this module fetches, asks, changes and audits. A status
change (supersede) happens only where the policy's `may_change_status` allows it.
"""

from __future__ import annotations

from adapters.base import MemoryPatch, NewMemory, Provenance, Status, StoredMemory
from adapters.errors import BackendNotFound
from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput, NotPermitted
from bridge.results import WriteResult
from bridge.operations import Approve, Forget, Promote
from bridge.runtime import BridgeRuntime
from bridge.writes import AUTHOR_TENANT, PROMOTED_BY, PROMOTED_FROM, WritePlan, release_memories, store
from identity.ids import is_valid_id
from identity.model import MemoryIdentity

__all__ = ["forget", "approve", "promote", "author_tenant"]


def author_tenant(memory: StoredMemory) -> str | None:
    """The tenant that wrote a global memory (bridge-written metadata; callers cannot set `vb.`)."""
    value = memory.metadata.get(AUTHOR_TENANT)
    return value if isinstance(value, str) else None


async def forget(rt: BridgeRuntime, identity: MemoryIdentity, op: Forget) -> bool:
    key, memory_id = op.ref
    if not rt.policy.may_fetch_for_change(identity, key):
        raise NotPermitted(f"{identity.principal} cannot act on memories in {key}")
    try:
        memory = await rt.backend.get(key, memory_id)
    except BackendNotFound:
        return False
    if not rt.policy.may_forget(identity, key, memory.provenance.author_user_id, author_tenant(memory)):
        raise NotPermitted(f"{identity.principal} may not forget {key}#{memory_id}: not the author and not a tenant admin")
    intent = await rt.state.audit.begin_intent(identity, "forget", key, memory_id)  # a crash after the delete is still audited
    deleted = await rt.backend.delete(key, memory_id)
    await rt.state.manifests.purge_memory_ids({memory_id})
    await rt.state.shares.purge_memory_ids({memory_id})  # a re-created id must not inherit the audience
    await rt.state.audit.append(identity, "forget", memory_ids=[memory_id], scopes=[key], closes_intent=intent)
    if deleted:
        await release_memories(rt, [memory])  # forget gives the quota space back
    return deleted


async def approve(rt: BridgeRuntime, identity: MemoryIdentity, op: Approve) -> WriteResult:
    key, memory_id = op.ref
    if not rt.policy.may_approve(identity, key):
        raise NotPermitted(f"{identity.principal} may not approve memories in {key} (needs the approver role for that scope, or admin)")
    memory = await rt.backend.get(key, memory_id)
    if memory.status is not Status.PENDING:
        raise InvalidInput(f"memory {memory_id} is {memory.status.value}, not pending")
    source = await _promotion_source(rt, identity, memory)  # checked BEFORE anything changes
    supersede = source is not None and rt.policy.may_change_status(identity, source.scope, source.provenance.author_user_id, author_tenant(source))
    updated = await rt.backend.update(key, memory_id, MemoryPatch(status=Status.ACTIVE))
    superseded = []
    if supersede:
        assert source is not None
        await rt.backend.update(source.scope, source.id, MemoryPatch(status=Status.SUPERSEDED))
        superseded.append(source.id)
    await rt.state.audit.append(
        identity, "approve", memory_ids=[memory_id, *superseded], scopes=[key, *([source.scope] if supersede and source else [])],
        detail={"superseded": superseded, "source_left_active": source.id if source is not None and not supersede else None},
    )
    return WriteResult(memory_id=memory_id, scope=str(key), visibility=key.visibility.value, kind=updated.kind, status=updated.status.value, reason=f"approved by {identity.principal}")


async def _promotion_source(rt: BridgeRuntime, approver: MemoryIdentity, proposal: StoredMemory) -> StoredMemory | None:
    """The memory a promotion proposal replaces, verified — or None if it is no promotion.

    The reference is bridge-written metadata (callers cannot set `vb.` keys), and it is
    still checked: same tenant as the approver, named in the proposal's lineage, written by
    the proposal's author. A source that no longer exists is simply not superseded.
    """
    ref_text = proposal.metadata.get(PROMOTED_FROM)
    if ref_text is None:
        return None
    scope_text, _, source_id = str(ref_text).rpartition("#")
    try:
        source_scope = ScopeKey.parse(scope_text)
    except ValueError:
        source_scope = None
    if source_scope is None or not is_valid_id(source_id):
        raise NotPermitted(f"proposal {proposal.id} names an invalid source {ref_text!r}; refusing to approve")
    if source_scope.tenant_id != approver.tenant_id or source_id not in proposal.provenance.derived_from:
        raise NotPermitted(f"proposal {proposal.id} names a source outside its tenant or lineage; refusing to approve")
    try:
        source = await rt.backend.get(source_scope, source_id)
    except BackendNotFound:
        return None
    if source.provenance.author_user_id != proposal.provenance.author_user_id:
        raise NotPermitted(f"proposal {proposal.id} would supersede a memory by another author; refusing to approve")
    return source


async def promote(rt: BridgeRuntime, identity: MemoryIdentity, op: Promote) -> WriteResult:
    key, memory_id = op.ref
    if not rt.policy.reads_by_default(identity, key):
        raise NotPermitted(f"{identity.principal} cannot act on memories in {key}")
    source = await rt.backend.get(key, memory_id)
    decision = rt.policy.decide_promotion(
        identity, source.scope, source.provenance.author_user_id, author_tenant(source), op.to, department_id=op.department_id
    )
    metadata = {**source.metadata, PROMOTED_FROM: f"{source.scope}#{source.id}", PROMOTED_BY: identity.principal}
    if decision.target.tenant_id is None:
        metadata[AUTHOR_TENANT] = identity.tenant_id
    copy = NewMemory(
        content=source.content,
        kind=source.kind,
        provenance=Provenance(
            author_user_id=source.provenance.author_user_id,
            author_agent_id=source.provenance.author_agent_id,
            session_id=identity.session_id,
            derived_from=(source.id,),
        ),
        status=decision.status,
        confidence=source.confidence,
        subject_user_id=source.subject_user_id,
        metadata=metadata,
        expires_at=source.expires_at,  # a copy lives no longer than its source (the source read is live: rt.backend)
    )
    plan = WritePlan(decision.target, copy, decision.reason, None, action="promote", detail={"from": f"{source.scope}#{source.id}", "superseded": decision.supersede_source})
    result = await store(rt, identity, plan)
    if decision.supersede_source:
        await rt.backend.update(source.scope, source.id, MemoryPatch(status=Status.SUPERSEDED))
    return result
