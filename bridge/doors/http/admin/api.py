"""The tenant-admin routes the console needs (`/api/v1/admin/...`), one operation each.

Each maps one request onto one operation of `bridge/operations/admin.py`; the policy decides
(tenant admins only, their own tenant only). `whoami` reports the caller's own identity, as the
credential established it, so the page can say who is signed in. Never a tenant in a parameter.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from bridge.operations import admin as admin_ops
from bridge.results import ManifestSummary, MemoryReaders, ScopeCount
from bridge.doors.http.routes.common import execute, grant_out, identity
from bridge.doors.http.schemas import GrantOut

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
