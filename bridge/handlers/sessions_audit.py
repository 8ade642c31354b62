"""Handlers of session binding and of audit queries."""

from __future__ import annotations

from bridge.operations import ForkSession, QueryAudit, StartSession
from bridge.runtime import BridgeRuntime
from bridge.state.records import AuditEvent
from identity.model import MemoryIdentity

__all__ = ["start_session", "fork_session", "query_audit"]


async def start_session(rt: BridgeRuntime, identity: MemoryIdentity, op: StartSession) -> MemoryIdentity:
    return rt.sessions.start_session(identity)


async def fork_session(rt: BridgeRuntime, identity: MemoryIdentity, op: ForkSession) -> MemoryIdentity:
    return rt.sessions.fork(identity, op.parent_session_id or identity.session_id)


async def query_audit(rt: BridgeRuntime, identity: MemoryIdentity, op: QueryAudit) -> list[AuditEvent]:
    return await rt.state.audit.query(rt.policy.audit_view(identity), action=op.action, memory_id=op.memory_id, since_seq=op.since_seq, limit=op.limit)
