"""Handlers that create memories: remember, write-back, capture — all through `writes.store`."""

from __future__ import annotations

import asyncio
import hashlib

from adapters.base import ConversationBackend, ConversationMessage
from adapters.scopes import ScopeKey, Visibility
from bridge.results import CaptureResult, WriteResult
from bridge.operations import Capture, Remember, WriteBack
from bridge.recall.scopes import load_manifest_for
from bridge.policy import roles as role_rules
from bridge.runtime import BridgeRuntime
from bridge.errors import InvalidInput
from bridge.capture.extract import classify
from bridge.vocabulary import Kind
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
    result = Remember(content=op.content, kind=op.kind, visibility=op.visibility, idempotency_key=op.idempotency_key, metadata=op.metadata)
    lineage = Lineage(derived_from=manifest.memory_ids, bridge_metadata={MANIFEST_ID: manifest.manifest_id})
    plan = plan_write(rt, child, result, lineage)
    if rt.roles is not None:  # the child's role names the layers and kinds it may write back
        role_rules.check_write_back(rt.roles, child, plan.scope.visibility.value, op.kind.value)
    return await store(rt, child, plan)


async def capture(rt: BridgeRuntime, identity: MemoryIdentity, op: Capture) -> CaptureResult:
    if op.team_id is not None or op.memory_type == "team":  # refused up front, whatever the text yields
        decide_team_write(identity, op.team_id, await rt.state.teams.teams_of(identity.tenant_id, identity.agent_id))
    expires_at = expiry_of(rt.clock(), op.expires_at, op.ttl_s)  # one instant for the whole capture
    plans = []
    if op.content is not None:
        plans.append(await _plan_content(rt, identity, op, expires_at))
    if rt.server_side_extraction and isinstance(rt.backend, ConversationBackend) and op.messages:
        if op.expires_at is not None or op.ttl_s is not None:
            raise InvalidInput(f"backend {rt.backend.name} extracts captures server-side and cannot give the memories it makes an expiry")
        if not plans:
            return await _capture_server_side(rt, identity, op)
        written = await _store_all(rt, identity, plans)
        backend = await _capture_server_side(rt, identity, op)
        return backend.model_copy(update={"written": tuple(written)})
    # rule extraction is CPU work on attacker-sized text: off the event loop
    candidates = await asyncio.to_thread(rt.extractor.extract, list(op.messages)) if op.messages else []
    for n, candidate in enumerate(candidates):
        key = None if op.idempotency_key is None else f"{op.idempotency_key}.{n}"
        memory = Remember(
            content=candidate.content, kind=candidate.kind, visibility=_captured_visibility(identity, op, candidate.kind),
            idempotency_key=key, confidence=CAPTURED_CONFIDENCE,
            memory_type=op.memory_type, visible_to=op.visible_to, team_id=op.team_id, expires_at=expires_at,
        )
        lineage = Lineage(message_ids=(candidate.message_id,) if candidate.message_id else (), captured=True)
        decision, audience = await resolve_write(rt, identity, memory)
        plans.append((plan_write(rt, identity, memory, lineage, decision=decision), audience))
    written = await _store_all(rt, identity, plans)
    yielding = {c.message_index for c in candidates}
    return CaptureResult(written=tuple(written), skipped=len(op.messages) - len(yielding))


async def _plan_content(rt: BridgeRuntime, identity: MemoryIdentity, op: Capture, expires_at: float | None) -> tuple:
    """Seed 000's `content`: the calling agent's own memory, whole, as given. Its kind is what
    the rules say (a note when none holds: it is stored all the same); its place is the agent's
    own (private) unless memory_type / visible_to / team_id name another."""
    kind = await asyncio.to_thread(classify, op.content) or Kind.NOTE
    memory_type = op.memory_type
    if memory_type is None and op.team_id is None:
        memory_type = "private"  # seed 000 rule 3: private is the default
    memory = Remember(
        content=op.content, kind=kind, idempotency_key=op.idempotency_key, memory_type=memory_type,
        visible_to=op.visible_to, team_id=op.team_id, expires_at=expires_at,
    )
    decision, audience = await resolve_write(rt, identity, memory)
    return plan_write(rt, identity, memory, Lineage(captured=True), decision=decision), audience


def _captured_visibility(identity: MemoryIdentity, op: Capture, kind: Kind) -> Visibility | None:
    """Seed 003's placement by kind, except that a department standard from a conversation of an
    identity with no single department stays with the user (it is never widened to guess one)."""
    if op.memory_type is None and op.team_id is None and op.visible_to is None and kind is Kind.STANDARD and len(identity.department_ids) != 1:
        return Visibility.PRIVATE
    return None


async def _store_all(rt: BridgeRuntime, identity: MemoryIdentity, plans: list) -> list[WriteResult]:
    if not plans:
        return []
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
    return written


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
