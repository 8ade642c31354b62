"""Routes of grants, manifests, sessions and the audit log (`/api/v1/...`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from bridge import operations as ops
from bridge.operations import reads
from bridge.operations.audit import MAX_SEQ
from bridge.results import PurgeReport
from bridge.doors.http.routes.common import audit_out, execute, grant_out, identity
from bridge.doors.http.schemas import AuditOut, Deleted, ForkRequest, GrantOut, GrantRequest, SessionOut

router = APIRouter(prefix="/api/v1", tags=["administration"])


@router.post("/grants", response_model=GrantOut, status_code=201, summary="Issue a grant (tenant admin)")
async def issue_grant(body: GrantRequest, request: Request) -> GrantOut:
    op = ops.IssueGrant(grantee_user_id=body.grantee_user_id, scope=body.scope, ttl_seconds=body.ttl_seconds, reason=body.reason, grantee_agent_id=body.grantee_agent_id)
    return grant_out(await execute(request, identity(request), op))


@router.get("/grants", response_model=list[GrantOut], summary="Grants held by the caller (or, for an admin, by a user)")
async def list_grants(
    request: Request, grantee_user_id: Annotated[str | None, Query(description="TARGET: whose grants (default: the caller's; others need admin).")] = None,
    include_inactive: bool = False,
) -> list[GrantOut]:
    return [grant_out(g) for g in await execute(request, identity(request), reads.ListGrants(grantee_user_id=grantee_user_id, include_inactive=include_inactive))]


@router.delete("/grants/{grant_id}", response_model=Deleted, summary="Revoke a grant (tenant admin)")
async def revoke_grant(grant_id: str, request: Request) -> Deleted:
    await execute(request, identity(request), ops.RevokeGrant(grant_id=grant_id))
    return Deleted(deleted=True)


@router.delete("/manifests/{manifest_id}", response_model=Deleted, summary="Revoke an injection manifest and those derived from it")
async def revoke_manifest(manifest_id: str, request: Request) -> Deleted:
    await execute(request, identity(request), ops.RevokeManifest(manifest_id=manifest_id))
    return Deleted(deleted=True)


@router.post("/sessions", response_model=SessionOut, summary="Start a new session bound to the caller (send it back as X-Session-Id)")
async def start_session(request: Request) -> SessionOut:
    bound = await execute(request, identity(request), ops.StartSession())
    return SessionOut(session_id=bound.session_id, principal=bound.principal)


@router.post("/sessions/fork", response_model=SessionOut, summary="A new session bound to the same identity")
async def fork_session(body: ForkRequest, request: Request) -> SessionOut:
    bound = await execute(request, identity(request), ops.ForkSession(parent_session_id=body.parent_session_id))
    return SessionOut(session_id=bound.session_id, principal=bound.principal)


@router.get("/audit", response_model=list[AuditOut], summary="Audit rows the caller may read, newest first")
async def audit(
    request: Request, action: str | None = None, memory_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100, since_seq: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    before_seq: Annotated[int | None, Query(ge=1, le=MAX_SEQ, description="Only rows older than this seq: pass the smallest seq of a page to page back.")] = None,
    actor: Annotated[str | None, Query(min_length=1, max_length=400, description="Only rows of this actor, e.g. 'acme/alice@assistant'.")] = None,
) -> list[AuditOut]:
    op = ops.QueryAudit(action=action, memory_id=memory_id, limit=limit, since_seq=since_seq, before_seq=before_seq, actor=actor)
    return [audit_out(e) for e in await execute(request, identity(request), op)]


@router.post("/purge-expired", response_model=PurgeReport, summary="Delete the caller's tenant's expired memories (tenant admin; one bounded run)")
async def purge_expired(request: Request, max_deletions: Annotated[int, Query(ge=1, le=100_000)] = 1000) -> PurgeReport:
    return await execute(request, identity(request), ops.PurgeExpired(max_deletions=max_deletions))
