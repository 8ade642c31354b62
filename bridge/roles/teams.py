"""Team membership from the role file, put into the bridge state when the bridge opens.

A role's `teams` lists the teams its agent belongs to; `team_tenants` (top level) names the
tenants whose teams take this membership. Each team the file names gets exactly the agents the
file lists (seed 000 section 5: only members read and write `<tenant>/team/<team_id>`); teams the
file does not name are left to the tenant-admin operations (`SetTeamMembers`, audited). A team
named in the role file is owned by it: an admin change to it is replaced at the next open.
Never reads a request: membership is operator configuration.
"""

from __future__ import annotations

from bridge.roles.permissions import RoleBook
from bridge.state.protocols import BridgeState

__all__ = ["role_team_membership", "apply_role_teams"]


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
