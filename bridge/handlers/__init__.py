"""One handler per operation: `HANDLERS[type(op)](runtime, identity, op)`.

A new operation = a frozen dataclass in `bridge/operations.py`, a handler function here, and a
line in HANDLERS; `MemoryBridge.execute` gives it session checks, limits and refusal audit.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from bridge import operations as ops
from bridge import admin_operations as admin_ops
from bridge import portable_operations as portable_ops
from bridge import read_operations as read_ops
from bridge import sharing_operations as share_ops
from bridge.handlers import erasure, expiry, federation, grants, injection, lifecycle, memories, portability, reads, sessions_audit, sharing
from bridge.handlers import console  # the admin console (issue 15)
from bridge.recall.pipeline import run_recall
from bridge.roles.operation import RoleInject

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
    ops.PurgeExpired: expiry.purge_expired,  # expiry and quotas (issue 13)
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
    # sharing and teams (issue 13)
    share_ops.SetVisibleTo: sharing.set_visible_to,
    share_ops.SetTeamMembers: sharing.set_team_members,
    share_ops.AddTeamMember: sharing.add_team_member,
    share_ops.RemoveTeamMember: sharing.remove_team_member,
    # role files and federated injection (issue 13)
    RoleInject: federation.role_inject,
    # the admin console (issue 15)
    admin_ops.TenantGrants: console.tenant_grants,
    admin_ops.TenantManifests: console.tenant_manifests,
    admin_ops.ScopeCounts: console.scope_counts,
    admin_ops.WhoCanRead: console.who_can_read,
}
