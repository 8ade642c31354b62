"""Role routes: federated injection over HTTP, and the caller's own role.

    POST /api/v1/roles/inject   seed 002's coordinator turn: the manifest the child's role calls
                                for (route, per-domain tier counts, the refs); `RoleInject`
    GET  /api/v1/roles/me       the caller's own role as the loaded role file states it

The caller is the parent (from the credential); `agent_id` names the TARGET child and the role
file and the policy decide. Never reveals another agent's role, nor any memory content.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from bridge.errors import RoleRefused
from bridge.operations.roles import RoleInject
from bridge.results import FederatedManifest
from bridge.doors.http.routes.common import check_caller, execute, identity
from bridge.doors.http.schemas import CALLER_USER, Body, Depth, RefModel

router = APIRouter(prefix="/api/v1/roles", tags=["roles"])


class RoleInjectRequest(Body):
    agent_id: str = Field(description="TARGET: the child agent (same tenant and user). The role file must let the caller inject into it; never the caller itself.")
    task: str = Field(min_length=1, description="The task text the intent router routes to the child's domains.")
    depth: Depth | None = Field(None, description="minimal / standard / full (seed 000); default: the child's role's depth.")
    carry: list[RefModel] = Field(default_factory=list, max_length=1000, description="Refs passed on on top of the plan (a queued write-back, e.g. a veto).")
    ttl_seconds: float = Field(3600, gt=0, le=7 * 86400)
    may_reinject: bool = Field(False, description="Let the child pass these on; its role must allow re-injection.")
    user_id: str | None = Field(None, description=CALLER_USER)


class RouteOut(BaseModel):
    primary: str
    auxiliary: list[str]


class RoleInjectOut(BaseModel):
    manifest_id: str
    child_agent_id: str
    depth: Depth
    route: RouteOut
    counts: dict[str, dict[str, int]] = Field(description="Per routed domain, the memories planned per tier.")
    slots: dict[str, dict[str, int]] = Field(description="Per routed domain, the slots per tier and the reserve (budget x multiplier, x auxiliary share).")
    memories: list[RefModel] = Field(description="Every ref of the manifest, planned then carried.")
    carried: int
    expires_at: float


class RoleOut(BaseModel):
    agent_id: str
    domains: list[str]
    tiers: list[Literal["hot", "warm", "cold"]]
    read_layers: list[str]
    write_layers: list[str]
    budget_multiplier: float
    allowed_kinds: list[str] | None
    teams: list[str]
    may_inject_into: list[str]
    may_reinject: bool
    depth: Depth


@router.post("/inject", response_model=RoleInjectOut, summary="Federated injection: the manifest the child's role calls for (seed 002)")
async def role_inject(body: RoleInjectRequest, request: Request) -> RoleInjectOut:
    who = identity(request)
    check_caller(who, user_id=body.user_id)
    op = RoleInject(child_agent_id=body.agent_id, task=body.task, depth=body.depth, carry=[(r.scope, r.memory_id) for r in body.carry], ttl_seconds=body.ttl_seconds, may_reinject=body.may_reinject)
    fm: FederatedManifest = await execute(request, who, op)
    m = fm.manifest
    return RoleInjectOut(
        manifest_id=m.manifest_id, child_agent_id=m.child_agent_id, depth=fm.depth.value, route=RouteOut(primary=fm.route.primary, auxiliary=list(fm.route.auxiliary)),
        counts=fm.plan.counts, slots=fm.plan.slots, memories=[RefModel(scope=str(k), memory_id=i) for k, i in m.entries], carried=len(fm.carried),
        expires_at=m.expires_at,
    )


@router.get("/me", response_model=RoleOut, summary="The caller's own role in the loaded role file")
async def my_role(request: Request) -> RoleOut:
    who = identity(request)
    book = request.app.state.ctx.bridge.runtime.roles
    if book is None:
        raise RoleRefused("no role file is loaded (VIKING_BRIDGE_ROLES_FILE)")
    role = book.role_of(who.agent_id)
    return RoleOut(
        agent_id=who.agent_id, domains=list(role.domains), tiers=list(role.tiers), read_layers=list(role.read_layers), write_layers=list(role.write_layers),
        budget_multiplier=role.budget_multiplier, allowed_kinds=None if role.allowed_kinds is None else [k.value for k in role.allowed_kinds],
        teams=list(role.teams), may_inject_into=list(role.may_inject_into), may_reinject=role.may_reinject, depth=role.depth,
    )
