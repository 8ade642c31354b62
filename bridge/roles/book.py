"""The loaded role file: each agent's role, team membership as the file states it, and the
intent router that goes with it. Data only; what the roles permit (who may inject into whom,
write back where) is decided in `bridge/policy/roles.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bridge.errors import RoleRefused
from bridge.roles.model import AgentRole, RoleFile
from bridge.roles.router import IntentRouter, KeywordRouter

__all__ = ["RoleBook"]


@dataclass(frozen=True)
class RoleBook:
    """A loaded role file and the router that goes with it (the default: its keyword rules)."""

    roles: RoleFile
    path: Path | None = None
    router: IntentRouter = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.router is None:
            object.__setattr__(self, "router", KeywordRouter(self.roles.domain_rules))

    def with_router(self, router: IntentRouter) -> "RoleBook":
        return RoleBook(self.roles, self.path, router)

    @property
    def agents(self) -> dict[str, AgentRole]:
        return self.roles.agents

    def role_of(self, agent_id: str) -> AgentRole:
        role = self.roles.agents.get(agent_id)
        if role is None:
            raise RoleRefused(f"agent {agent_id!r} has no role in {self.where()}")
        return role

    def teams_of(self, agent_id: str) -> frozenset[str]:
        role = self.roles.agents.get(agent_id)
        return frozenset(role.teams) if role else frozenset()

    def members(self, team_id: str) -> frozenset[str]:
        return frozenset(name for name, role in self.roles.agents.items() if team_id in role.teams)

    def where(self) -> str:
        return str(self.path) if self.path else "the role file"
