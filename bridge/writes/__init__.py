"""The one write path: remember, capture, write-back and promotion all end in `store`.

`plan_write` turns a `Remember` (plus lineage the bridge itself supplies) into a `WritePlan`
through the policy; `store` carries a plan to the backend so that nothing acknowledged is lost
and nothing stored goes unaudited:

0. expiry (`expires_at` / `ttl_s`) is resolved against the bridge's clock, and the storage quota
   is reserved (`reserve`, bridge/state/protocols.py UsageLedger) — before any intent or put, so a write past a
   quota raises `QuotaExceeded` with nothing written; a batch (capture) reserves as one;
1. a write intent is recorded durably (bridge state) before the backend sees the write;
2. `backend.put` with an idempotency key namespaced by the writer (retries never duplicate);
3. the audit row, the intent's closing and the store marker commit in one state transaction
   (`append_stored`: one row per stored memory, however many attempts it took);
4. if that audit row cannot be stored, a memory this call created is deleted again.

A crash between 2 and 3 leaves an open intent, reconciled at the next open (`recovery.py`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from adapters.base import NewMemory, Provenance, Status, StoreBinding, StoredMemory
from adapters.errors import BackendConflict
from adapters.errors import BackendError, InvalidRequest, BackendUnavailable
from adapters.errors import BackendNotFound
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput, NotPermitted
from bridge.results import WriteResult
from bridge.policy import WriteDecision
from bridge.policy.sharing import memory_type_of, visible_to_of
from bridge.policy.quotas import Usage, content_bytes
from bridge.operations.fields import MAX_TTL_S
from bridge.operations import Remember
from bridge.runtime import BridgeRuntime
from identity.model import MemoryIdentity

__all__ = ["Lineage", "WritePlan", "plan_write", "store", "reserve", "release", "release_memories", "reserve_bytes", "quota_owner", "expiry_of", "backend_key", "PROMOTED_FROM", "PROMOTED_BY", "AUTHOR_TENANT", "MANIFEST_ID"]

PROMOTED_FROM = "vb.promoted_from"
PROMOTED_BY = "vb.promoted_by"
AUTHOR_TENANT = "vb.author_tenant"
MANIFEST_ID = "vb.manifest_id"


@dataclass(frozen=True)
class Lineage:
    """What the bridge itself knows about a write's origin (never taken from the caller)."""

    message_ids: tuple[str, ...] = ()
    derived_from: tuple[str, ...] = ()
    bridge_metadata: Mapping[str, str] = field(default_factory=dict)
    captured: bool = False  # extracted from conversation text


@dataclass(frozen=True)
class WritePlan:
    scope: ScopeKey
    memory: NewMemory
    reason: str
    idempotency_key: str | None  # the caller's key, as the caller wrote it
    action: str = "write"
    detail: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def provenance(identity: MemoryIdentity, lineage: Lineage = Lineage()) -> Provenance:
    return Provenance(
        author_user_id=identity.user_id,
        author_agent_id=identity.agent_id,
        session_id=identity.session_id,
        source_message_ids=lineage.message_ids,
        derived_from=lineage.derived_from,
    )


def expiry_of(now: float, expires_at: float | None, ttl_s: float | None) -> float | None:
    """The absolute expiry of a write at `now` (the bridge's clock), or None; `InvalidInput`
    for one in the past or further than `MAX_TTL_S` ahead."""
    if ttl_s is not None:
        return now + ttl_s
    if expires_at is None:
        return None
    if expires_at <= now:
        raise InvalidInput(f"expires_at {expires_at} is not in the future (the bridge's clock reads {now:.3f})")
    if expires_at - now > MAX_TTL_S:
        raise InvalidInput(f"expires_at is more than {MAX_TTL_S:.0f} s ahead; leave it unset for a memory that never expires")
    return expires_at


#: Places a captured memory reaches only after an approver confirms it.
_CONFIRMED_ONLY = (Visibility.DEPARTMENT, Visibility.TENANT, Visibility.GLOBAL)


def plan_write(rt: BridgeRuntime, identity: MemoryIdentity, op: Remember, lineage: Lineage = Lineage(), decision: WriteDecision | None = None) -> WritePlan:
    """Where `op` lands and with which status, as the policy decides; `NotPermitted` if nowhere.
    `decision`: one the sharing rules already made (team memory, `memory_type`, `visible_to`)."""
    expires_at = expiry_of(rt.clock(), op.expires_at, op.ttl_s)
    decision = decision or rt.policy.decide_write(identity, op.kind, op.visibility, department_id=op.department_id)
    status, reason = decision.status, decision.reason
    if lineage.captured and decision.scope.visibility in _CONFIRMED_ONLY:
        # Seed 003: project facts and decisions are the workspace's at once (the session names
        # the workspace; a team's membership authorises its memory), but the text chose the
        # kind, so it may not also make a department standard, or anything wider, live
        # unconfirmed: agent inferences never become organisation knowledge by themselves.
        status, reason = Status.PENDING, f"{reason}; extracted from conversation, pending approval"
    extra = dict(lineage.bridge_metadata)
    if decision.scope.visibility is Visibility.GLOBAL:
        extra[AUTHOR_TENANT] = identity.tenant_id
    memory = NewMemory(
        content=op.content,
        kind=op.kind.value,
        provenance=provenance(identity, lineage),
        status=status,
        confidence=op.confidence,
        subject_user_id=identity.user_id,
        metadata={**op.metadata, **extra},
        expires_at=expires_at,
    )
    return WritePlan(decision.scope, memory, reason, op.idempotency_key)


def quota_owner(identity: MemoryIdentity, plan: WritePlan) -> tuple[str, str]:
    """(tenant, user) a write is counted against: the writer's tenant and user (a global memory
    counts against the tenant that wrote it)."""
    return identity.tenant_id, plan.memory.provenance.author_user_id


async def reserve(rt: BridgeRuntime, identity: MemoryIdentity, plans: list[WritePlan]) -> None:
    """Take the quota `plans` need, all or nothing (`QuotaExceeded` leaves everything unchanged)."""
    if not rt.quotas.enabled or not plans:
        return
    tenant_id, user_id = quota_owner(identity, plans[0])
    need = Usage(len(plans), sum(content_bytes(p.memory.content) for p in plans))
    tenant, user = rt.quotas.limits_for(tenant_id)
    await rt.state.usage.reserve(tenant_id, user_id, need, tenant, user)


async def release_memories(rt: BridgeRuntime, memories: list[StoredMemory]) -> None:
    """Give back the space of memories that were deleted (forget, reject, erasure, expiry): each
    counted against its scope's tenant (a global one: the tenant that wrote it) and its author."""
    owners: dict[tuple[str | None, str], list[str]] = {}
    for m in memories:
        owners.setdefault(_owner_of(m), []).append(m.content)
    for (tenant, user), contents in owners.items():
        await release(rt, tenant, user, contents)


def _owner_of(memory: StoredMemory) -> tuple[str | None, str]:
    tenant = memory.scope.tenant_id
    if tenant is None:
        value = memory.metadata.get(AUTHOR_TENANT)
        tenant = value if isinstance(value, str) else None
    return tenant, memory.provenance.author_user_id


async def reserve_bytes(rt: BridgeRuntime, memory: StoredMemory, delta: int) -> None:
    """An edit changed `memory`'s text by `delta` bytes: take (delta > 0, may raise
    `QuotaExceeded`) or give back (delta < 0) that many bytes of its owner's quota."""
    tenant, user = _owner_of(memory)
    if not rt.quotas.enabled or tenant is None or delta == 0:
        return
    if delta > 0:
        tenant_limits, user_limits = rt.quotas.limits_for(tenant)
        await rt.state.usage.reserve(tenant, user, Usage(0, delta), tenant_limits, user_limits)
    else:
        await rt.state.usage.release(tenant, user, Usage(0, -delta))


async def release(rt: BridgeRuntime, tenant_id: str | None, user_id: str, contents: list[str]) -> None:
    """Give back the space of removed (or never stored) memories."""
    if not rt.quotas.enabled or not contents or tenant_id is None:
        return
    await rt.state.usage.release(tenant_id, user_id, Usage(len(contents), sum(content_bytes(c) for c in contents)))


def backend_key(identity: MemoryIdentity, scope: ScopeKey, caller_key: str | None, material: str) -> str:
    """Idempotency key as stored: namespaced by the writer, so two users' keys never meet."""
    basis = f"key|{caller_key}" if caller_key is not None else f"auto|{identity.session_id}|{material}"
    digest = hashlib.sha256(f"{identity.tenant_id}|{identity.user_id}|{identity.agent_id}|{scope}|{basis}".encode()).hexdigest()
    return "vb" + digest[:40]


async def store(rt: BridgeRuntime, identity: MemoryIdentity, plan: WritePlan, *, reserved: bool = False) -> WriteResult:
    """Carry `plan` to the backend (steps 0-4 above). `reserved`: the caller already took the
    quota for it (a batch reserves as one, `reserve`)."""
    scope, backend = plan.scope, rt.store
    key = backend_key(identity, scope, plan.idempotency_key, f"{plan.memory.kind}|{plan.memory.content}")
    if not reserved:
        await reserve(rt, identity, [plan])
    owner_tenant, owner_user = quota_owner(identity, plan)
    audit = rt.state.audit
    try:
        intent = await audit.begin_intent(identity, plan.action, scope, key)
    except BaseException:
        await release(rt, owner_tenant, owner_user, [plan.memory.content])
        raise
    try:
        stored = await _put(rt, identity, scope, plan.memory, key)
    except BackendConflict:
        await audit.close_intent(intent)
        await release(rt, owner_tenant, owner_user, [plan.memory.content])
        shown = f"idempotency key {plan.idempotency_key!r}" if plan.idempotency_key else "this content's automatic idempotency key"
        raise BackendConflict(f"{shown} was already used for a different memory", backend=backend.name, scope=scope) from None
    except BackendError as exc:
        if not exc.retryable:  # refused outright: nothing landed
            await audit.close_intent(intent)
            await release(rt, owner_tenant, owner_user, [plan.memory.content])
        raise  # otherwise (and on cancellation) it may have landed: the open intent is reconciled
    if stored.created is False:  # an idempotent retry: the first write holds the space already
        await release(rt, owner_tenant, owner_user, [plan.memory.content])
    if stored.scope != scope:  # an adapter that stored elsewhere is a bug; never acknowledge it
        raise NotPermitted(f"backend {backend.name} stored the memory in {stored.scope}, not {scope}")
    created = stored.created is True  # an adapter that cannot say (None) never gets its record deleted below
    marker = await backend.store_marker() if isinstance(backend, StoreBinding) else None
    try:
        # exactly one row per stored memory: a deduplicated retry of an audited write adds none,
        # and this row closes every earlier attempt's intent too (so open checks do not add a
        # `recovered` row for a write a retry already audited)
        await audit.append_stored(
            identity, plan.action, memory_id=stored.id, scope=scope, backend_key=key, created=stored.created is True,
            detail={"kind": plan.memory.kind, "status": stored.status.value, **plan.detail},
            closes_intent=intent, store_marker=marker,
        )
    except Exception:
        if created:  # no acknowledged write without its audit row
            try:
                await backend.delete(scope, stored.id)
                await release(rt, owner_tenant, owner_user, [plan.memory.content])
            except (BackendUnavailable, InvalidRequest):
                pass  # the open intent makes the next open reconcile it
        raise
    return WriteResult(
        memory_id=stored.id, scope=str(scope), visibility=scope.visibility.value, kind=stored.kind,
        status=stored.status.value, reason=plan.reason, deduplicated=stored.created is False,
        memory_type=memory_type_of(scope).value, visible_to=visible_to_of(scope), expires_at=stored.expires_at,
    )


async def _put(rt: BridgeRuntime, identity: MemoryIdentity, scope: ScopeKey, memory: NewMemory, key: str) -> StoredMemory:
    """`backend.put`, where an expired memory holding the key is gone, not a duplicate: an
    expired memory is never an answer, so it neither blocks its key (a Conflict) nor stands in
    for the new write (an idempotent hit) — it is retired first, as the purge would, and the
    write lands."""
    try:
        stored = await rt.store.put(scope, memory, idempotency_key=key)
    except BackendConflict:
        holder = await rt.store.find_by_idempotency_key(scope, key)
        if holder is None or not holder.expired(rt.clock()):
            raise
        await retire_expired(rt, identity, scope, holder)
        return await rt.store.put(scope, memory, idempotency_key=key)
    if stored.created is False and stored.expired(rt.clock()):
        await retire_expired(rt, identity, scope, stored)
        return await rt.store.put(scope, memory, idempotency_key=key)
    return stored


async def retire_expired(rt: BridgeRuntime, identity: MemoryIdentity, key: ScopeKey, memory: StoredMemory) -> bool:
    """Delete one expired memory as the purge does: a write intent (`expired`) first (a crash
    after the delete is still audited at the next open), the delete, manifests and shares
    forget the id, one `expired` audit row closing the intent, the quota space back. False if
    another purger or a forget got there first (they audited it)."""
    intent = await rt.state.audit.begin_intent(identity, "expired", key, memory.id)
    try:
        deleted = await rt.store.delete(key, memory.id)
    except BackendNotFound:
        deleted = False
    if not deleted:
        await rt.state.audit.close_intent(intent)
        return False
    await rt.state.manifests.purge_memory_ids({memory.id})
    await rt.state.shares.purge_memory_ids({memory.id})  # a re-created id must not inherit the audience
    await rt.state.audit.append(
        identity, "expired", memory_ids=[memory.id], scopes=[key], closes_intent=intent,
        detail={"expires_at": memory.expires_at, "kind": memory.kind},
    )
    await release_memories(rt, [memory])
    return True
