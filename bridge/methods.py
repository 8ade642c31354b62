"""The friendly methods of `MemoryBridge`: each builds one operation and runs `execute`.

Like LangGraph's `BaseStore.get/put/search` over `batch`: no logic lives here, so a door (CLI,
HTTP route, MCP tool) that builds the operation itself behaves exactly like these methods.
Parameters are documented on the operation classes in `bridge/operations/__init__.py`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from adapters.scopes import ScopeKey, Visibility
from bridge import operations as ops
from bridge.operations import reads
from bridge.operations import sharing as share_ops
from bridge.results import CaptureResult, MemoryRef, Message, RecallResult, WriteResult
from bridge.state.records import AuditEvent, Grant, InjectDepth, InjectionManifest
from bridge.vocabulary import Kind, Purpose
from identity.model import MemoryIdentity

__all__ = ["OperationMethods"]

Ref = MemoryRef | tuple[str, str] | Mapping[str, str]


class OperationMethods:
    async def execute(self, identity: MemoryIdentity, op: ops.Operation) -> Any:
        raise NotImplementedError

    async def recall(
        self, identity: MemoryIdentity, query: str, *, purpose: Purpose | str = Purpose.CHAT, budget_tokens: int | None = None,
        kinds: Iterable[Kind | str] | None = None, include_scopes: Iterable[ScopeKey | str] = (), manifest_id: str | None = None,
        allow_partial: bool = False, min_score: float | None = None, only_scopes: Iterable[ScopeKey | str] | None = None,
    ) -> RecallResult:
        return await self.execute(identity, ops.Recall(query=query, purpose=purpose, budget_tokens=budget_tokens, kinds=kinds, include_scopes=include_scopes, manifest_id=manifest_id, allow_partial=allow_partial, min_score=min_score, only_scopes=only_scopes))

    async def remember(
        self, identity: MemoryIdentity, content: str, kind: Kind | str, *, visibility: Visibility | str | None = None,
        department_id: str | None = None, idempotency_key: str | None = None, metadata: Mapping[str, Any] | None = None,
        confidence: float = 1.0, memory_type: str | None = None, visible_to: Sequence[str] | None = None, team_id: str | None = None,
        expires_at: float | None = None, ttl_s: float | None = None,
    ) -> WriteResult:
        return await self.execute(identity, ops.Remember(content=content, kind=kind, visibility=visibility, department_id=department_id, idempotency_key=idempotency_key, metadata=metadata, confidence=confidence, memory_type=memory_type, visible_to=visible_to, team_id=team_id, expires_at=expires_at, ttl_s=ttl_s))

    async def capture(
        self, identity: MemoryIdentity, messages: Sequence[Message | Mapping[str, Any]], *, idempotency_key: str | None = None,
        memory_type: str | None = None, visible_to: Sequence[str] | None = None, team_id: str | None = None,
        expires_at: float | None = None, ttl_s: float | None = None, content: str | None = None,
    ) -> CaptureResult:
        return await self.execute(identity, ops.Capture(messages=messages, idempotency_key=idempotency_key, memory_type=memory_type, visible_to=visible_to, team_id=team_id, expires_at=expires_at, ttl_s=ttl_s, content=content))

    async def purge_expired(self, identity: MemoryIdentity, *, max_deletions: int = 1000) -> Any:
        """One purge run over the caller's tenant (tenant admins); returns a `PurgeReport`."""
        return await self.execute(identity, ops.PurgeExpired(max_deletions=max_deletions))

    # -- sharing and teams (bridge/operations/sharing.py) --
    async def set_visible_to(self, identity: MemoryIdentity, ref: Ref, visible_to: Sequence[str]) -> Any:
        return await self.execute(identity, share_ops.SetVisibleTo(ref=ref, visible_to=visible_to))

    async def set_team_members(self, admin: MemoryIdentity, team_id: str, agent_ids: Sequence[str]) -> Any:
        return await self.execute(admin, share_ops.SetTeamMembers(team_id=team_id, agent_ids=agent_ids))

    async def add_team_member(self, admin: MemoryIdentity, team_id: str, member_agent_id: str) -> Any:
        return await self.execute(admin, share_ops.AddTeamMember(team_id=team_id, member_agent_id=member_agent_id))

    async def remove_team_member(self, admin: MemoryIdentity, team_id: str, member_agent_id: str) -> Any:
        return await self.execute(admin, share_ops.RemoveTeamMember(team_id=team_id, member_agent_id=member_agent_id))

    async def forget(self, identity: MemoryIdentity, ref: Ref) -> bool:
        return await self.execute(identity, ops.Forget(ref=ref))

    async def forget_subject(self, identity: MemoryIdentity, subject_user_id: str) -> int:
        return await self.execute(identity, ops.ForgetSubject(subject_user_id=subject_user_id))

    async def approve(self, identity: MemoryIdentity, ref: Ref) -> WriteResult:
        return await self.execute(identity, ops.Approve(ref=ref))

    async def promote(self, identity: MemoryIdentity, ref: Ref, to: Visibility | str, *, department_id: str | None = None) -> WriteResult:
        return await self.execute(identity, ops.Promote(ref=ref, to=to, department_id=department_id))

    async def grant(
        self, admin: MemoryIdentity, grantee_user_id: str, scope: ScopeKey | str, *, ttl_seconds: float, reason: str,
        grantee_agent_id: str | None = None,
    ) -> Grant:
        return await self.execute(admin, ops.IssueGrant(grantee_user_id=grantee_user_id, scope=scope, ttl_seconds=ttl_seconds, reason=reason, grantee_agent_id=grantee_agent_id))

    async def revoke_grant(self, admin: MemoryIdentity, grant_id: str) -> None:
        await self.execute(admin, ops.RevokeGrant(grant_id=grant_id))

    async def inject(
        self, parent: MemoryIdentity, child_agent_id: str, task: str, *, depth: InjectDepth | str = InjectDepth.STANDARD,
        memory_refs: Sequence[Ref] | None = None, from_manifest_id: str | None = None, ttl_seconds: float = 3600,
        may_reinject: bool = False,
    ) -> InjectionManifest:
        return await self.execute(parent, ops.Inject(child_agent_id=child_agent_id, task=task, depth=depth, memory_refs=memory_refs, from_manifest_id=from_manifest_id, ttl_seconds=ttl_seconds, may_reinject=may_reinject))

    async def revoke_manifest(self, identity: MemoryIdentity, manifest_id: str) -> None:
        await self.execute(identity, ops.RevokeManifest(manifest_id=manifest_id))

    async def write_back(
        self, child: MemoryIdentity, manifest_id: str, content: str, kind: Kind | str, *, visibility: Visibility | str | None = None,
        idempotency_key: str | None = None, metadata: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        return await self.execute(child, ops.WriteBack(manifest_id=manifest_id, content=content, kind=kind, visibility=visibility, idempotency_key=idempotency_key, metadata=metadata or {}))

    async def audit_events(self, identity: MemoryIdentity, *, action: str | None = None, memory_id: str | None = None, limit: int = 100, since_seq: int = 0) -> list[AuditEvent]:
        return await self.execute(identity, ops.QueryAudit(action=action, memory_id=memory_id, limit=limit, since_seq=since_seq))

    async def start_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        return await self.execute(identity, ops.StartSession())

    async def fork_session(self, identity: MemoryIdentity, parent_session_id: str | None = None) -> MemoryIdentity:
        return await self.execute(identity, ops.ForkSession(parent_session_id=parent_session_id))


class ReadMethods:
    """Sugar of the read API; `MemoryBridge` gains these by inheriting this class
    (or a door builds the operations itself)."""

    async def execute(self, identity: MemoryIdentity, op: ops.Operation) -> Any:
        raise NotImplementedError

    async def get_memory(self, identity: MemoryIdentity, ref: Ref) -> Any:
        return await self.execute(identity, reads.GetMemory(ref=ref))

    async def find_by_key(self, identity: MemoryIdentity, scope: ScopeKey | str, key: str) -> Any:
        return await self.execute(identity, reads.FindByKey(scope=scope, key=key))

    async def list_memories(self, identity: MemoryIdentity, scope: ScopeKey | str, *, cursor: str | None = None, limit: int = 50, status: str = "active") -> Any:
        return await self.execute(identity, reads.ListMemories(scope=scope, cursor=cursor, limit=limit, status=status))

    async def pending_approvals(self, identity: MemoryIdentity, *, cursor: str | None = None, limit: int = 50) -> Any:
        return await self.execute(identity, reads.PendingApprovals(cursor=cursor, limit=limit))

    async def edit_memory(self, identity: MemoryIdentity, ref: Ref, *, content: str | None = None, metadata: Mapping[str, Any] | None = None, confidence: float | None = None) -> Any:
        return await self.execute(identity, reads.EditMemory(ref=ref, content=content, metadata=metadata, confidence=confidence))

    async def reject(self, identity: MemoryIdentity, ref: Ref) -> bool:
        return await self.execute(identity, reads.Reject(ref=ref))

    async def list_grants(self, identity: MemoryIdentity, *, grantee_user_id: str | None = None, include_inactive: bool = False) -> list[Grant]:
        return await self.execute(identity, reads.ListGrants(grantee_user_id=grantee_user_id, include_inactive=include_inactive))

    async def inject_context(self, parent: MemoryIdentity, child_agent_id: str, task: str, **kwargs: Any) -> Any:
        return await self.execute(parent, reads.InjectContext(inject=ops.Inject(child_agent_id=child_agent_id, task=task, **kwargs)))

    async def role_inject(
        self, parent: MemoryIdentity, child_agent_id: str, task: str, *, depth: InjectDepth | str | None = None,
        carry: Sequence[Ref] = (), ttl_seconds: float = 3600, may_reinject: bool = False,
    ) -> Any:
        """Federated injection (bridge/roles/): the manifest the child's role calls for."""
        from bridge.operations.roles import RoleInject

        return await self.execute(parent, RoleInject(child_agent_id=child_agent_id, task=task, depth=depth, carry=carry, ttl_seconds=ttl_seconds, may_reinject=may_reinject))
