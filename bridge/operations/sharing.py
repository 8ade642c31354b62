"""The sharing operations as data: change a memory's `visible_to`, set or change a
team's members — plus the validators of the sharing fields `Remember` and `Capture` carry.

Like `bridge/operations/__init__.py`: frozen, validated at construction, no field naming the caller. The
tenant is always the caller's (from the credential), so an admin of tenant B cannot name tenant
A's teams or shares at all; `visible_to` names agents of the caller's own user only.
"""

from __future__ import annotations

from typing import ClassVar
from dataclasses import dataclass

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.operations.limits import Limits
from bridge.operations.base import Operation
from bridge.operations.fields import visible_to_field
from bridge.operations.fields import ident, memory_ref, sequence, team_ident

__all__ = ["SetVisibleTo", "SetTeamMembers", "AddTeamMember", "RemoveTeamMember"]

MAX_TEAM_MEMBERS = 1000


def _set(op: object, name: str, value: object) -> None:
    object.__setattr__(op, name, value)


@dataclass(frozen=True, slots=True, kw_only=True)
class SetVisibleTo(Operation):
    """Narrow or widen who sees one private agent memory (the owning agent or a tenant admin)."""

    changes_ref: ClassVar[bool] = True

    ref: tuple[ScopeKey, str]
    visible_to: tuple[str, ...]

    def __post_init__(self) -> None:
        _set(self, "ref", memory_ref(self.ref))
        names = visible_to_field(self.visible_to)
        if names is None:
            raise InvalidInput("set_visible_to needs visible_to")
        _set(self, "visible_to", names)


@dataclass(frozen=True, slots=True, kw_only=True)
class SetTeamMembers(Operation):
    """Make a team of the caller's tenant have exactly these member agents (tenant admin)."""

    team_id: str
    agent_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        _set(self, "team_id", team_ident(self.team_id, "team_id"))
        _set(self, "agent_ids", tuple(sorted({ident(a, "agent_ids") for a in sequence(self.agent_ids, "agent_ids")})))

    def check(self, limits: Limits) -> None:
        if len(self.agent_ids) > MAX_TEAM_MEMBERS:
            raise InvalidInput(f"a team has at most {MAX_TEAM_MEMBERS} members")


@dataclass(frozen=True, slots=True, kw_only=True)
class AddTeamMember(Operation):
    team_id: str
    member_agent_id: str

    def __post_init__(self) -> None:
        _set(self, "team_id", team_ident(self.team_id, "team_id"))
        _set(self, "member_agent_id", ident(self.member_agent_id, "member_agent_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTeamMember(Operation):
    team_id: str
    member_agent_id: str

    def __post_init__(self) -> None:
        _set(self, "team_id", team_ident(self.team_id, "team_id"))
        _set(self, "member_agent_id", ident(self.member_agent_id, "member_agent_id"))
