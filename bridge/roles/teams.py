"""Team membership: `TeamMembership` (team id -> member agent ids), the loader that puts it into
the bridge state (`apply_team_membership`), and the role file's teams applied when a bridge opens.

Membership decides who reads and writes `acme/team/<team_id>` (only members), so it is
configuration an operator owns: a role file, or the tenant-admin operations `SetTeamMembers` /
`AddTeamMember` / `RemoveTeamMember` (audited). It must never come from a request body, memory
content or a prompt: nothing here is reachable from a caller's input.

A role's `teams` lists the teams its agent belongs to; `team_tenants` (top level) names the
tenants whose teams take this membership. Each team the file names gets exactly the agents the
file lists; teams the file does not name are left to the tenant-admin operations. A team named
in the role file is owned by it: an admin change to it is replaced at the next open.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping, Protocol, Union

from bridge.errors import InvalidInput
from bridge.roles.book import RoleBook
from bridge.state.protocols import BridgeState
from bridge.vocabulary import NARROWED_TEAM_PREFIX
from identity.errors import InvalidInput as IdentityInvalidInput
from identity.ids import validate_id

__all__ = ["TeamMembership", "apply_team_membership", "role_team_membership", "apply_role_teams"]


class HasState(Protocol):
    """A `MemoryBridge` as far as a loader needs it: its state (so this module never imports the facade)."""

    @property
    def state(self) -> BridgeState: ...


@dataclass(frozen=True)
class TeamMembership:
    """Validated membership of one tenant's teams: every id obeys `identity.ids`; `"*"` is no
    member (a team lists its agents by name)."""

    teams: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, membership: Mapping[str, Iterable[str]]) -> "TeamMembership":
        """From `{team_id: [agent_id, ...]}`; `InvalidInput` naming the team and the bad id."""
        if not isinstance(membership, Mapping):
            raise InvalidInput(f"team membership must be a mapping of team id to agent ids, not {type(membership).__name__}")
        out: dict[str, frozenset[str]] = {}
        for team, agents in membership.items():
            try:
                validate_id(team, "team_id")
                if team.startswith(NARROWED_TEAM_PREFIX):
                    raise InvalidInput(f"team membership: team id {team!r} is reserved (it names a team's narrowed memory)")
                if isinstance(agents, str) or not isinstance(agents, Iterable):
                    raise InvalidInput(f"team {team!r}: members must be a list of agent ids")
                members = frozenset(validate_id(a, f"member of team {team}") for a in agents)
            except IdentityInvalidInput as exc:
                raise InvalidInput(f"team membership: {exc}") from None
            out[team] = members
        return cls(MappingProxyType(out))


async def apply_team_membership(
    target: Union[HasState, BridgeState],
    tenant_id: str,
    membership: TeamMembership | Mapping[str, Iterable[str]],
) -> TeamMembership:
    """Make each named team of `tenant_id` have exactly the listed members (teams not named are
    left alone; an empty list dissolves a team). `target` is a `MemoryBridge` or its state.

    For loaders (role files at start-up). Not audited per caller — there is no caller; a change
    made on behalf of a person goes through `SetTeamMembers`, which a tenant admin runs and the
    audit log records."""
    try:
        validate_id(tenant_id, "tenant_id")
    except IdentityInvalidInput as exc:
        raise InvalidInput(str(exc)) from None
    parsed = membership if isinstance(membership, TeamMembership) else TeamMembership.of(membership)
    state: BridgeState = getattr(target, "state", target)
    for team, agents in sorted(parsed.teams.items()):
        await state.teams.set_members(tenant_id, team, agents)
    return parsed



def role_team_membership(book: RoleBook) -> dict[str, frozenset[str]]:
    """{team_id: member agent ids} as the role file states it (ids validated by the model)."""
    teams = {team for role in book.agents.values() for team in role.teams}
    return {team: book.members(team) for team in sorted(teams)}


async def apply_role_teams(state: BridgeState, book: RoleBook) -> dict[str, dict[str, frozenset[str]]]:
    """Set the file's teams in every tenant of `team_tenants`; returns what was applied."""
    membership = role_team_membership(book)
    applied: dict[str, dict[str, frozenset[str]]] = {}
    for tenant in book.roles.team_tenants:
        for team, agents in membership.items():
            await state.teams.set_members(tenant, team, agents)
        applied[tenant] = membership
    return applied
