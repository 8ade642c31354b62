"""One handler per operation: `HANDLERS[type(op)](runtime, identity, op)`.

Each module here is named like the operations module it serves (`bridge/operations/<name>.py`).
A new operation is a frozen dataclass there, a handler function here, and one line in HANDLERS;
`MemoryBridge.execute` gives it session checks, limits and the audit of refusals.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from bridge import operations as ops
from bridge.handlers import (
    admin, audit, erasure, expiry, export, grants, injection, keys, lifecycle, memories, reads, roles, sessions, sharing,
)
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
    ops.PurgeExpired: expiry.purge_expired,
    ops.IssueGrant: grants.issue_grant,
    ops.RevokeGrant: grants.revoke_grant,
    ops.Inject: injection.inject,
    ops.RevokeManifest: injection.revoke_manifest,
    ops.QueryAudit: audit.query_audit,
    ops.StartSession: sessions.start_session,
    ops.ForkSession: sessions.fork_session,
    # reading, editing and approving stored memories
    ops.GetMemory: reads.get_memory,
    ops.FindMemory: reads.find_memory,
    ops.MemoryHistory: reads.memory_history,
    ops.FindByKey: reads.find_by_key,
    ops.ListMemories: reads.list_memories,
    ops.PendingApprovals: reads.pending_approvals,
    ops.EditMemory: reads.edit_memory,
    ops.Reject: reads.reject,
    ops.ListGrants: reads.list_grants,
    ops.InjectContext: reads.inject_context,
    ops.ExportMemories: export.export_memories,
    # sharing (visible_to) and team membership
    ops.SetVisibleTo: sharing.set_visible_to,
    ops.SetTeamMembers: sharing.set_team_members,
    ops.AddTeamMember: sharing.add_team_member,
    ops.RemoveTeamMember: sharing.remove_team_member,
    # federated injection from role files
    ops.RoleInject: roles.role_inject,
    # the admin console's reads
    ops.TenantGrants: admin.tenant_grants,
    ops.TenantManifests: admin.tenant_manifests,
    ops.ScopeCounts: admin.scope_counts,
    ops.WhoCanRead: admin.who_can_read,
    ops.BrowseMemories: admin.browse_memories,
    ops.TenantDirectory: admin.tenant_directory,
    # API-key management of a tenant admin
    ops.ListApiKeys: keys.list_api_keys,
    ops.IssueApiKey: keys.issue_api_key,
    ops.RevokeApiKey: keys.revoke_api_key,
}
