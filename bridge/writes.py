"""The one write path: remember, capture, write-back and promotion all end in `store`.

`plan_write` turns a `Remember` (plus lineage the bridge itself supplies) into a `WritePlan`
through the policy; `store` carries a plan to the backend so that nothing acknowledged is lost
and nothing stored goes unaudited:

1. a write intent is recorded durably (bridge state) before the backend sees the write;
2. `backend.put` with an idempotency key namespaced by the writer (retries never duplicate);
3. the audit row, the intent's closing and the store marker commit in one state transaction;
4. if that audit row cannot be stored, a memory this call created is deleted again.

A crash between 2 and 3 leaves an open intent, reconciled at the next open (`recovery.py`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from adapters.base import NewMemory, Provenance, Status, StoreBinding
from adapters.errors import Conflict as BackendConflict
from adapters.errors import BackendError, InvalidRequest, Unavailable
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import NotPermitted
from bridge.models import WriteResult
from bridge.policy import WriteDecision
from bridge.sharing_policy import memory_type_of, visible_to_of
from bridge.operations import Remember
from bridge.runtime import BridgeRuntime
from identity.model import MemoryIdentity

__all__ = ["Lineage", "WritePlan", "plan_write", "store", "backend_key", "PROMOTED_FROM", "PROMOTED_BY", "AUTHOR_TENANT", "MANIFEST_ID"]

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


def plan_write(rt: BridgeRuntime, identity: MemoryIdentity, op: Remember, lineage: Lineage = Lineage(), decision: WriteDecision | None = None) -> WritePlan:
    """Where `op` lands and with which status, as the policy decides; `NotPermitted` if nowhere.
    `decision`: one the sharing rules already made (team memory, `memory_type`, `visible_to`)."""
    decision = decision or rt.policy.decide_write(identity, op.kind, op.visibility, department_id=op.department_id)
    status, reason = decision.status, decision.reason
    if lineage.captured and decision.scope.visibility not in (Visibility.PRIVATE, Visibility.AGENT):
        # Extracted from conversation text: the text chose the kind, so it may not also
        # choose to share. Seed 003: agent inferences never become shared knowledge unconfirmed.
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
    )
    return WritePlan(decision.scope, memory, reason, op.idempotency_key)


def backend_key(identity: MemoryIdentity, scope: ScopeKey, caller_key: str | None, material: str) -> str:
    """Idempotency key as stored: namespaced by the writer, so two users' keys never meet."""
    basis = f"key|{caller_key}" if caller_key is not None else f"auto|{identity.session_id}|{material}"
    digest = hashlib.sha256(f"{identity.tenant_id}|{identity.user_id}|{identity.agent_id}|{scope}|{basis}".encode()).hexdigest()
    return "vb" + digest[:40]


async def store(rt: BridgeRuntime, identity: MemoryIdentity, plan: WritePlan) -> WriteResult:
    scope, backend = plan.scope, rt.backend
    key = backend_key(identity, scope, plan.idempotency_key, f"{plan.memory.kind}|{plan.memory.content}")
    audit = rt.state.audit
    intent = await audit.begin_intent(identity, plan.action, scope, key)
    try:
        stored = await backend.put(scope, plan.memory, idempotency_key=key)
    except BackendConflict:
        await audit.close_intent(intent)
        shown = f"idempotency key {plan.idempotency_key!r}" if plan.idempotency_key else "this content's automatic idempotency key"
        raise BackendConflict(f"{shown} was already used for a different memory", backend=backend.name, scope=scope) from None
    except BackendError as exc:
        if not exc.retryable:  # refused outright: nothing landed
            await audit.close_intent(intent)
        raise  # otherwise (and on cancellation) it may have landed: the open intent is reconciled
    if stored.scope != scope:  # an adapter that stored elsewhere is a bug; never acknowledge it
        raise NotPermitted(f"backend {backend.name} stored the memory in {stored.scope}, not {scope}")
    created = stored.created is True  # an adapter that cannot say (None) never gets its record deleted below
    marker = await backend.store_marker() if isinstance(backend, StoreBinding) else None
    try:
        await audit.append(
            identity, plan.action, memory_ids=[stored.id], scopes=[scope],
            detail={"kind": plan.memory.kind, "status": stored.status.value, **plan.detail},
            closes_intent=intent, store_marker=marker,
        )
    except Exception:
        if created:  # no acknowledged write without its audit row
            try:
                await backend.delete(scope, stored.id)
            except (Unavailable, InvalidRequest):
                pass  # the open intent makes the next open reconcile it
        raise
    return WriteResult(
        memory_id=stored.id, scope=str(scope), visibility=scope.visibility.value, kind=stored.kind,
        status=stored.status.value, reason=plan.reason, deduplicated=stored.created is False,
        memory_type=memory_type_of(scope).value, visible_to=visible_to_of(scope),
    )
