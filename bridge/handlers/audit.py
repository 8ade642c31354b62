"""Handler of audit queries: what the audit log shows an identity is the policy's audit view."""

from __future__ import annotations

from bridge.operations import QueryAudit
from bridge.runtime import BridgeRuntime
from bridge.state.records import AuditEvent
from identity.model import MemoryIdentity

__all__ = ["query_audit"]


async def query_audit(rt: BridgeRuntime, identity: MemoryIdentity, op: QueryAudit) -> list[AuditEvent]:
    return await rt.state.audit.query(
        rt.policy.audit_view(identity), action=op.action, memory_id=op.memory_id, since_seq=op.since_seq, before_seq=op.before_seq, actor=op.actor, limit=op.limit,
    )
