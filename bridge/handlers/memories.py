"""Handlers that create memories: remember, write-back, capture — all through `writes.store`."""

from __future__ import annotations

import asyncio
import hashlib

from adapters.base import ConversationBackend, ConversationMessage
from adapters.scopes import ScopeKey
from bridge.results import CaptureResult, WriteResult
from bridge.operations import Capture, Remember, WriteBack
from bridge.recall.scopes import load_manifest_for
from bridge.policy import roles as role_rules
from bridge.runtime import BridgeRuntime
from bridge.errors import InvalidInput
from bridge.handlers.sharing import record_share, resolve_write
from bridge.policy.sharing import decide_team_write
from bridge.writes import MANIFEST_ID, Lineage, expiry_of, plan_write, provenance, quota_owner, release, reserve, store
from identity.model import MemoryIdentity

__all__ = ["remember", "write_back", "capture"]

CAPTURED_CONFIDENCE = 0.8  # extracted by rules from conversation, not stated as a memory


async def remember(rt: BridgeRuntime, identity: MemoryIdentity, op: Remember) -> WriteResult:
    decision, audience = await resolve_write(rt, identity, op)  # memory_type / visible_to / team_id
    result = await store(rt, identity, plan_write(rt, identity, op, decision=decision))
    return await record_share(rt, identity, result, audience)


async def write_back(rt: BridgeRuntime, child: MemoryIdentity, op: WriteBack) -> WriteResult:
    manifest = await load_manifest_for(rt, child, op.manifest_id)
    result = Remember(op.content, op.kind, visibility=op.visibility, idempotency_key=op.idempotency_key, metadata=op.metadata)
    lineage = Lineage(derived_from=manifest.memory_ids, bridge_metadata={MANIFEST_ID: manifest.manifest_id})
    plan = plan_write(rt, child, result, lineage)
    if rt.roles is not None:  # the child's role names the layers and kinds it may write back
        role_rules.check_write_back(rt.roles, child, plan.scope.visibility.value, op.kind.value)
    return await store(rt, child, plan)


async def capture(rt: BridgeRuntime, identity: MemoryIdentity, op: Capture) -> CaptureResult:
    if op.team_id is not None or op.memory_type == "team":  # refused up front, whatever the text yields
        decide_team_write(identity, op.team_id, await rt.state.teams.teams_of(identity.tenant_id, identity.agent_id))
    if rt.server_side_extraction and isinstance(rt.backend, ConversationBackend):
        if op.expires_at is not None or op.ttl_s is not None:
            raise InvalidInput(f"backend {rt.backend.name} extracts captures server-side and cannot give the memories it makes an expiry")
        return await _capture_server_side(rt, identity, op)
    # rule extraction is CPU work on attacker-sized text: off the event loop
    candidates = await asyncio.to_thread(rt.extractor.extract, list(op.messages))
    expires_at = expiry_of(rt.clock(), op.expires_at, op.ttl_s)  # one instant for the whole capture
    plans = []
    for n, candidate in enumerate(candidates):
        key = None if op.idempotency_key is None else f"{op.idempotency_key}.{n}"
        memory = Remember(
            candidate.content, candidate.kind, idempotency_key=key, confidence=CAPTURED_CONFIDENCE,
            memory_type=op.memory_type, visible_to=op.visible_to, team_id=op.team_id, expires_at=expires_at,
        )
        lineage = Lineage(message_ids=(candidate.message_id,) if candidate.message_id else (), captured=True)
        decision, audience = await resolve_write(rt, identity, memory)
        plans.append((plan_write(rt, identity, memory, lineage, decision=decision), audience))
    await reserve(rt, identity, [plan for plan, _ in plans])  # the whole capture fits the quota, or nothing is written
    written = []
    for done, (plan, audience) in enumerate(plans):
        try:
            stored = await store(rt, identity, plan, reserved=True)
        except BaseException:
            left = [p for p, _ in plans[done + 1:]]  # reserved, never attempted: give their space back
            if left:
                await release(rt, *quota_owner(identity, left[0]), [p.memory.content for p in left])
            raise
        written.append(await record_share(rt, identity, stored, audience))
    yielding = {c.message_index for c in candidates}
    return CaptureResult(written=tuple(written), skipped=len(op.messages) - len(yielding))


async def _capture_server_side(rt: BridgeRuntime, identity: MemoryIdentity, op: Capture) -> CaptureResult:
    private = ScopeKey.private(identity.tenant_id, identity.user_id)
    session_key = hashlib.sha256(f"{identity.fingerprint}|{identity.session_id}".encode()).hexdigest()
    receipt = await rt.backend.capture(  # type: ignore[attr-defined]
        private,
        [ConversationMessage(m.role, m.content, m.message_id) for m in op.messages],
        session_key=session_key,
        provenance=provenance(identity, Lineage(message_ids=tuple(m.message_id for m in op.messages if m.message_id))),
    )
    await rt.state.audit.append(identity, "capture", scopes=[private], detail={"backend_session": receipt.backend_session_id, "messages": receipt.accepted_messages})
    return CaptureResult(written=(), skipped=0, backend_session_id=receipt.backend_session_id)
