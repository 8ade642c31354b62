"""Handlers of sharing and teams: where a write with `memory_type` / `visible_to` / `team_id`
lands and whom it is shared with; changing `visible_to`; team membership.

Every decision is `bridge/policy/sharing.py`'s; this module loads what those decisions need from
the state, stores the outcome and audits it (`share`, `team` rows; refusals are audited as
`denied` by `MemoryBridge.execute`). The recall side is `bridge/recall/visibility.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput
from bridge.results import ShareResult, TeamResult, WriteResult
from bridge.operations import Remember
from bridge.policy import WriteDecision
from bridge.operations.sharing import AddTeamMember, RemoveTeamMember, SetTeamMembers, SetVisibleTo
from bridge.policy.sharing import (
    check_share_change, check_team_admin, decide_narrowed_team_write, decide_team_write, memory_type_of, private_target, visible_to_of, write_audience,
)
from bridge.vocabulary import EVERY_AGENT
from identity.model import MemoryIdentity

if TYPE_CHECKING:
    from bridge.runtime import BridgeRuntime

__all__ = ["resolve_write", "record_share", "set_visible_to", "set_team_members", "add_team_member", "remove_team_member"]


# -- writes ----------------------------------------------------------------------------------
async def _check_known(rt: BridgeRuntime, tenant_id: str, audience: frozenset[str]) -> None:
    """Once a tenant declares its agents (team membership, role files), `visible_to` may only
    name declared agents: a typo must not become a share with an agent nobody runs."""
    named = sorted(audience - {EVERY_AGENT})
    if not named or not await rt.state.teams.has_teams(tenant_id):
        return
    unknown = [a for a in named if not await rt.state.teams.knows_agent(tenant_id, a)]
    if unknown:
        raise InvalidInput(f"visible_to names agents tenant {tenant_id} does not know: {', '.join(unknown)}")


async def resolve_write(rt: BridgeRuntime, identity: MemoryIdentity, op: Remember) -> tuple[WriteDecision | None, frozenset[str]]:
    """(where the write lands — None: the policy's default placement —, the share audience)."""
    mt, names, team = op.memory_type, op.visible_to, op.team_id
    if mt == "team" or team is not None or op.visibility is Visibility.TEAM:
        if mt == "private" or op.visibility not in (None, Visibility.TEAM):
            raise InvalidInput("team memory is written with memory_type team (and a team_id), not with another visibility")
        member_of = await rt.state.teams.teams_of(identity.tenant_id, identity.agent_id)
        decision = decide_team_write(identity, team, member_of)
        if names in (None, (EVERY_AGENT,)):
            return decision, frozenset()
        # seed 000 3.3: an explicit list narrows the team memory to those agents (plus the author)
        members = await rt.state.teams.members(identity.tenant_id, decision.scope.owner_id or "")
        return decide_narrowed_team_write(identity, decision, names, members)
    if mt is None and names is None:
        return None, frozenset()
    if mt == "private" or (names != (EVERY_AGENT,) and op.visibility is None):
        v = private_target(identity, op.visibility)
    else:
        v = op.visibility
    decision = rt.policy.decide_write(identity, op.kind, v, department_id=op.department_id)
    audience = write_audience(identity, decision.scope, names)
    await _check_known(rt, identity.tenant_id, audience)
    return decision, audience


async def record_share(rt: BridgeRuntime, identity: MemoryIdentity, result: WriteResult, audience: frozenset[str]) -> WriteResult:
    """After the memory is stored (so a failure here leaves it visible to its owner only)."""
    scope = ScopeKey.parse(result.scope)
    if audience:
        await rt.state.shares.set_audience(scope, result.memory_id, audience, rt.clock())
        await rt.state.audit.append(identity, "share", memory_ids=[result.memory_id], scopes=[scope], detail={"visible_to": sorted(audience)})
    return result.model_copy(update={"visible_to": visible_to_of(scope, audience)})


# -- changing visible_to ---------------------------------------------------------------------
async def set_visible_to(rt: BridgeRuntime, identity: MemoryIdentity, op: SetVisibleTo) -> ShareResult:
    key, memory_id = op.ref
    check_share_change(identity, key)
    await rt.backend.get(key, memory_id)  # NotFound for a memory that does not exist
    audience = frozenset(op.visible_to) - {key.owner_id or ""}
    await _check_known(rt, identity.tenant_id, audience)
    before = (await rt.state.shares.audience_of(key, [memory_id])).get(memory_id, frozenset())
    await rt.state.shares.set_audience(key, memory_id, audience, rt.clock())
    await rt.state.audit.append(
        identity, "share", memory_ids=[memory_id], scopes=[key],
        detail={"visible_to": sorted(audience), "before": sorted(before)},
    )
    return ShareResult(memory_id=memory_id, scope=str(key), memory_type=memory_type_of(key).value, visible_to=visible_to_of(key, audience))


# -- teams -----------------------------------------------------------------------------------
async def _team_changed(rt: BridgeRuntime, admin: MemoryIdentity, team_id: str, before: frozenset[str]) -> TeamResult:
    after = await rt.state.teams.members(admin.tenant_id, team_id)
    await rt.state.audit.append(
        admin, "team", scopes=[ScopeKey.team(admin.tenant_id, team_id)],
        detail={"team": team_id, "members": sorted(after), "before": sorted(before)},
    )
    return TeamResult(team_id=team_id, members=tuple(sorted(after)))


async def set_team_members(rt: BridgeRuntime, admin: MemoryIdentity, op: SetTeamMembers) -> TeamResult:
    check_team_admin(admin)
    before = await rt.state.teams.members(admin.tenant_id, op.team_id)
    await rt.state.teams.set_members(admin.tenant_id, op.team_id, frozenset(op.agent_ids))
    return await _team_changed(rt, admin, op.team_id, before)


async def add_team_member(rt: BridgeRuntime, admin: MemoryIdentity, op: AddTeamMember) -> TeamResult:
    check_team_admin(admin)
    before = await rt.state.teams.members(admin.tenant_id, op.team_id)
    await rt.state.teams.add_member(admin.tenant_id, op.team_id, op.member_agent_id)
    return await _team_changed(rt, admin, op.team_id, before)


async def remove_team_member(rt: BridgeRuntime, admin: MemoryIdentity, op: RemoveTeamMember) -> TeamResult:
    check_team_admin(admin)
    before = await rt.state.teams.members(admin.tenant_id, op.team_id)
    await rt.state.teams.remove_member(admin.tenant_id, op.team_id, op.member_agent_id)
    return await _team_changed(rt, admin, op.team_id, before)
