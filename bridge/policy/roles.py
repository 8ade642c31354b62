"""What the role file permits, as pure functions of an identity and the loaded roles.

    check_inject      the parent has a role and lists the child (or "*") in `may_inject_into`;
                      a re-injection (from a manifest) also needs the parent's `may_reinject`;
                      handing the child `may_reinject` needs the child's role to allow it
    check_write_back  a child's write-back lands in one of its `write_layers`, of an allowed kind
    teams_of/members  team membership as the role file states it (for the team scopes)

Fail closed: once a role file is loaded, an agent without a role may not inject. These checks
come on top of the policy's (`Policy.check_inject`: never into itself; a re-injection needs a
manifest that allows it) — they can only refuse more, never allow what the policy refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bridge.errors import RoleRefused
from bridge.roles.model import ANY_AGENT, AgentRole, RoleFile
from bridge.roles.router import IntentRouter, KeywordRouter
from identity.model import MemoryIdentity

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
            raise RoleRefused(f"agent {agent_id!r} has no role in {self._where()}")
        return role

    def check_inject(self, parent: MemoryIdentity, child_agent_id: str, *, reinjection: bool, grants_reinject: bool) -> None:
        role = self.role_of(parent.agent_id)
        targets = role.may_inject_into
        if ANY_AGENT not in targets and child_agent_id not in targets:
            raise RoleRefused(f"agent {parent.agent_id!r} may not inject into {child_agent_id!r} (agents.{parent.agent_id}.may_inject_into in {self._where()})")
        if reinjection and not role.may_reinject:
            raise RoleRefused(f"agent {parent.agent_id!r} may not pass on injected memories (agents.{parent.agent_id}.may_reinject is false in {self._where()})")
        if grants_reinject and not self.role_of(child_agent_id).may_reinject:
            raise RoleRefused(f"agent {child_agent_id!r} may not re-inject (agents.{child_agent_id}.may_reinject is false), so its manifest cannot allow it")

    def check_write_back(self, child: MemoryIdentity, layer: str, kind: str) -> None:
        role = self.role_of(child.agent_id)
        if layer not in role.write_layers:
            raise RoleRefused(f"agent {child.agent_id!r} may not write back into the {layer} layer (agents.{child.agent_id}.write_layers = {list(role.write_layers)})")
        if role.allowed_kinds is not None and kind not in {k.value for k in role.allowed_kinds}:
            raise RoleRefused(f"agent {child.agent_id!r} may not write back a {kind} (agents.{child.agent_id}.allowed_kinds)")

    def teams_of(self, agent_id: str) -> frozenset[str]:
        role = self.roles.agents.get(agent_id)
        return frozenset(role.teams) if role else frozenset()

    def members(self, team_id: str) -> frozenset[str]:
        return frozenset(name for name, role in self.roles.agents.items() if team_id in role.teams)

    def _where(self) -> str:
        return str(self.path) if self.path else "the role file"
