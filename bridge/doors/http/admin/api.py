"""The tenant-admin routes the console needs (`/api/v1/admin/...`), one operation each.

Each maps one request onto one operation of `bridge/operations/admin.py`; the policy decides
(tenant admins only, their own tenant only). `whoami` reports the caller's own identity, as the
credential established it, so the page can say who is signed in. Never a tenant in a parameter.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field

from bridge.operations import admin as admin_ops
from bridge.operations import keys as key_ops
from bridge.results import ApiKeyOut, IssuedApiKeyOut, ManifestSummary, MemoryPage, MemoryReaders, ScopeCount, TenantDirectoryOut
from bridge.doors.http.routes.common import execute, grant_out, identity
from bridge.doors.http.schemas import Body, Deleted, GrantOut

router = APIRouter(prefix="/api/v1/admin", tags=["admin console"])
Scope = Annotated[str, Query(min_length=1, max_length=400, description="The memory's scope key, e.g. 'acme/ws/alpha'.")]


class WhoAmI(BaseModel):
    principal: str
    tenant_id: str
    user_id: str
    agent_id: str
    workspace_id: str | None = None
    department_ids: list[str]
    roles: list[str]
    readable_scopes: list[str] = []  # the scopes the caller reads by default (no grant needed), as the policy says
    #: where the caller's tenant's memories live: the backend kind, or `name (kind)` on a routed service
    memory_backend: str = ""


@router.get("/whoami", response_model=WhoAmI, summary="The caller's own identity, as the credential established it")
async def whoami(request: Request) -> WhoAmI:
    who = identity(request)
    backend = request.app.state.ctx.bridge.backend
    home_of = getattr(backend, "home_of", None)  # a routed service names the tenant's own backend
    return WhoAmI(
        memory_backend=home_of(who.tenant_id) if home_of is not None else backend.name,
        principal=who.principal, tenant_id=who.tenant_id, user_id=who.user_id, agent_id=who.agent_id, workspace_id=who.workspace_id,
        department_ids=sorted(who.department_ids), roles=sorted(who.roles),
        readable_scopes=[str(k) for k, _ in request.app.state.ctx.bridge.policy.own_scopes(who)],
    )


@router.get("/grants", response_model=list[GrantOut], summary="Every grant of the caller's tenant, in force unless include_inactive (tenant admin)")
async def tenant_grants(request: Request, include_inactive: bool = False, limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[GrantOut]:
    return [grant_out(g) for g in await execute(request, identity(request), admin_ops.TenantGrants(include_inactive=include_inactive, limit=limit))]


@router.get("/manifests", response_model=list[ManifestSummary], summary="Live injection manifests of the caller's tenant (tenant admin)")
async def tenant_manifests(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[ManifestSummary]:
    return await execute(request, identity(request), admin_ops.TenantManifests(limit=limit))


@router.get("/scopes", response_model=list[ScopeCount], summary="Memories per scope of the caller's tenant, by status (tenant admin)")
async def scope_counts(request: Request) -> list[ScopeCount]:
    return await execute(request, identity(request), admin_ops.ScopeCounts())


@router.get("/memories/{memory_id}/readers", response_model=MemoryReaders, summary="Who can read one memory and why (tenant admin)")
async def who_can_read(memory_id: str, scope: Scope, request: Request) -> MemoryReaders:
    return await execute(request, identity(request), admin_ops.WhoCanRead(ref=(scope, memory_id)))


@router.get("/memories", response_model=MemoryPage, summary="One page of one scope's memories, optionally only those containing `text` (tenant admin)")
async def browse_memories(
    scope: Scope, request: Request, text: Annotated[str | None, Query(min_length=1, max_length=400, description="Only memories whose content contains this (case-insensitive).")] = None,
    status: Annotated[str | None, Query(description="active, pending or superseded; default: every status.")] = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None, limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> MemoryPage:
    return await execute(request, identity(request), admin_ops.BrowseMemories(scope=scope, text=text, status=status, cursor=cursor, limit=limit))


@router.get("/directory", response_model=TenantDirectoryOut, summary="Users, agents and teams of the caller's tenant, as the bridge knows them (tenant admin)")
async def tenant_directory(request: Request) -> TenantDirectoryOut:
    return await execute(request, identity(request), admin_ops.TenantDirectory())


class KeyRequest(Body):
    """The identity a new key of the caller's tenant stands for (the tenant is always the
    caller's). Every field names the key's TARGET identity, never the caller, hence `for_*`."""

    for_user: str = Field(min_length=1, max_length=128, description="TARGET: the user the key acts as.")
    for_agent: str = Field("assistant", min_length=1, max_length=128, description="TARGET: the agent the key acts as.")
    for_departments: list[str] = Field(default_factory=list, max_length=64, description="TARGET: the key's departments.")
    for_workspace: str | None = Field(None, min_length=1, max_length=128, description="TARGET: the key's workspace.")
    with_roles: list[str] = Field(default_factory=list, max_length=8, description="admin, approver, or global_admin (only by one who holds it).")
    label: str = Field("", max_length=200)


@router.get("/keys", response_model=list[ApiKeyOut], summary="API keys of the caller's tenant, never their secrets (tenant admin)")
async def list_keys(request: Request, include_revoked: bool = False) -> list[ApiKeyOut]:
    return await execute(request, identity(request), key_ops.ListApiKeys(include_revoked=include_revoked))


@router.post("/keys", response_model=IssuedApiKeyOut, status_code=201, summary="Issue an API key of the caller's tenant; the answer holds the only copy of the secret (tenant admin)")
async def issue_key(body: KeyRequest, request: Request) -> IssuedApiKeyOut:
    op = key_ops.IssueApiKey(
        user_id=body.for_user, agent_id=body.for_agent, department_ids=tuple(body.for_departments), workspace_id=body.for_workspace,
        roles=tuple(body.with_roles), label=body.label,
    )
    return await execute(request, identity(request), op)


@router.delete("/keys/{key_id}", response_model=Deleted, summary="Revoke an API key of the caller's tenant, by its id (tenant admin)")
async def revoke_key(key_id: Annotated[str, Path(min_length=1, max_length=300)], request: Request) -> Deleted:
    return Deleted(deleted=await execute(request, identity(request), key_ops.RevokeApiKey(key_id=key_id)))
