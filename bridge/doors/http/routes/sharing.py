"""Routes of sharing and teams: change a memory's `visible_to`, and a tenant admin's team membership
(`/api/v1/...`). Plus `write_team`: how a write's `team_id` body field is read.

`team_id` on capture/remember was seed 000's assertion about the caller's team (its workspace).
It keeps that meaning when it equals the credential's workspace and no `memory_type: team` is
asked for; otherwise it names a team, and the write lands there only if the caller's agent is a
member (the policy decides; a non-member gets 403). Either way it can only narrow a write.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import Field

from bridge.operations import sharing as share_ops
from bridge.results import ShareResult, TeamResult
from bridge.doors.http.routes.common import execute, identity
from bridge.doors.http.schemas import VISIBLE_TO, Body
from identity.model import MemoryIdentity

__all__ = ["router", "write_team", "VisibleToRequest", "TeamMembersRequest", "TeamMemberRequest"]

router = APIRouter(prefix="/api/v1", tags=["sharing"])
Scope = Annotated[str, Query(min_length=1, max_length=400, description="The memory's scope key, e.g. 'acme/agent/wukong/alice'.")]


class VisibleToRequest(Body):
    visible_to: list[str] = Field(min_length=1, max_length=64, description=VISIBLE_TO + " Only the owning agent or a tenant admin may change it.")


class TeamMembersRequest(Body):
    agent_ids: list[str] = Field(max_length=1000, description="TARGET: the team's member agents (of the admin's own tenant); [] dissolves it.")


class TeamMemberRequest(Body):
    member_agent_id: str = Field(min_length=1, max_length=128, description="TARGET: the agent to add to the team.")


def write_team(who: MemoryIdentity, team_id: str | None, memory_type: str | None) -> str | None:
    """The team a write names, or None when `team_id` only asserts the caller's workspace."""
    if team_id is not None and memory_type != "team" and team_id == who.workspace_id:
        return None
    return team_id


@router.put("/memories/{memory_id}/visible-to", response_model=ShareResult, summary="Narrow or widen who sees a private agent memory (seed 000 visible_to)")
async def set_visible_to(memory_id: str, scope: Scope, body: VisibleToRequest, request: Request) -> ShareResult:
    return await execute(request, identity(request), share_ops.SetVisibleTo(ref=(scope, memory_id), visible_to=body.visible_to))


@router.put("/teams/{team_id}", response_model=TeamResult, summary="Set a team's member agents (tenant admin)")
async def set_team_members(team_id: str, body: TeamMembersRequest, request: Request) -> TeamResult:
    return await execute(request, identity(request), share_ops.SetTeamMembers(team_id=team_id, agent_ids=body.agent_ids))


@router.post("/teams/{team_id}/members", response_model=TeamResult, summary="Add an agent to a team (tenant admin)")
async def add_team_member(team_id: str, body: TeamMemberRequest, request: Request) -> TeamResult:
    return await execute(request, identity(request), share_ops.AddTeamMember(team_id=team_id, member_agent_id=body.member_agent_id))


@router.delete("/teams/{team_id}/members/{member_agent_id}", response_model=TeamResult, summary="Remove an agent from a team (tenant admin)")
async def remove_team_member(team_id: str, member_agent_id: str, request: Request) -> TeamResult:
    return await execute(request, identity(request), share_ops.RemoveTeamMember(team_id=team_id, member_agent_id=member_agent_id))
