"""Handlers of explicit grants: issue and revoke (the policy decides, the repository stores)."""

from __future__ import annotations

import uuid

from bridge.operations import IssueGrant, RevokeGrant
from bridge.runtime import BridgeRuntime
from bridge.state.records import Grant
from identity.model import MemoryIdentity

__all__ = ["issue_grant", "revoke_grant"]


async def issue_grant(rt: BridgeRuntime, admin: MemoryIdentity, op: IssueGrant) -> Grant:
    rt.policy.check_grant_issue(admin, op.scope, op.ttl_seconds, op.reason)
    now = rt.clock()
    grant = Grant(uuid.uuid4().hex, admin.tenant_id, op.grantee_user_id, op.grantee_agent_id, op.scope, admin.principal, op.reason.strip(), now, now + op.ttl_seconds)
    await rt.state.grants.add(grant)
    await rt.state.audit.append(admin, "grant", scopes=[op.scope], grant_ids=[grant.grant_id], detail={"grantee": op.grantee_user_id, "expires_at": grant.expires_at})
    return grant


async def revoke_grant(rt: BridgeRuntime, admin: MemoryIdentity, op: RevokeGrant) -> None:
    rt.policy.check_grant_revoke(admin, await rt.state.grants.get(op.grant_id), op.grant_id)
    await rt.state.grants.revoke(op.grant_id, rt.clock())
    await rt.state.audit.append(admin, "revoke", grant_ids=[op.grant_id])
