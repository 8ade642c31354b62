"""One handler per operation: `HANDLERS[type(op)](runtime, identity, op)`.

A new operation = a frozen dataclass in `bridge/operations.py`, a handler function here, and a
line in HANDLERS; `MemoryBridge.execute` gives it session checks, limits and refusal audit.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from bridge import operations as ops
from bridge import portable_operations as portable_ops
from bridge import read_operations as read_ops
from bridge.handlers import erasure, grants, injection, lifecycle, memories, portability, reads, sessions_audit
from bridge.recall.pipeline import run_recall

__all__ = ["HANDLERS"]

HANDLERS: dict[type[ops.Operation], Callable[..., Awaitable[Any]]] = {
    ops.Recall: run_recall,
    ops.Remember: memories.remember,
    ops.Capture: memories.capture,
    ops.WriteBack: memories.write_back,
    ops.Forget: lifecycle.forget,
    ops.Approve: lifecycle.approve,
    ops.Promote: lifecycle.promote,
    ops.ForgetSubject: erasure.forget_subject,
    ops.IssueGrant: grants.issue_grant,
    ops.RevokeGrant: grants.revoke_grant,
    ops.Inject: injection.inject,
    ops.RevokeManifest: injection.revoke_manifest,
    ops.QueryAudit: sessions_audit.query_audit,
    ops.StartSession: sessions_audit.start_session,
    ops.ForkSession: sessions_audit.fork_session,
    # the read API (issue 11)
    read_ops.GetMemory: reads.get_memory,
    read_ops.FindByKey: reads.find_by_key,
    read_ops.ListMemories: reads.list_memories,
    read_ops.PendingApprovals: reads.pending_approvals,
    read_ops.EditMemory: reads.edit_memory,
    read_ops.Reject: reads.reject,
    read_ops.ListGrants: reads.list_grants,
    read_ops.InjectContext: reads.inject_context,
    # export (issue 15)
    portable_ops.ExportMemories: portability.export_memories,
}
