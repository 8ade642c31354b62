"""Shares and team membership: what the bridge stores so that `visible_to` and teams are enforced
inside every backend's query (issue 13 items 1 and 2) — the protocols and the in-process store.

A **share** says: memory `memory_id`, stored in an agent's own scope (`acme/agent/<author>/<user>`
or a task scope), may also be read by these other agents of the same user (`"*"` = every agent
of that user). The memory never moves; the policy turns the shares a reader holds into
`ScopeEntry(author_scope, memory_ids=...)`, which every adapter enforces inside its query. So
narrowing or widening a memory's audience is one update of this table, effective at the next
query on every backend.

A **team** is a set of agent ids of one tenant; `acme/team/<team_id>` is read and written only
by its members.

Both repositories keep integrity rules only (one row per (scope, memory, agent), one per
(tenant, team, agent)); they never decide who may do what. The reader's lookups are indexed
(`shared_with`: by tenant, user, agent; `teams_of`: by tenant, agent) — never a scan of all rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, runtime_checkable

from adapters.scopes import ScopeKey

__all__ = ["EVERY_AGENT", "Share", "ShareRepository", "TeamRepository", "MemoryShares", "MemoryTeams"]

#: The audience entry meaning "every agent acting for the memory's user".
EVERY_AGENT = "*"


@dataclass(frozen=True)
class Share:
    """The extra audience of one memory, beyond the agent that owns the scope."""

    scope: ScopeKey
    memory_id: str
    audience: frozenset[str]


@runtime_checkable
class ShareRepository(Protocol):
    async def set_audience(self, scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> None:
        """Replace the audience of one memory (an empty set removes its share) in one transaction."""
        ...

    async def audience_of(self, scope: ScopeKey, memory_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        """The stored audience of each of these memories of `scope` (absent: not shared)."""
        ...

    async def shared_with(self, tenant_id: str, user_id: str, agent_id: str) -> dict[ScopeKey, frozenset[str]]:
        """Memory ids by scope that `agent_id` (or every agent, `"*"`) of this user may read."""
        ...

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        """Forgotten memories lose their shares (a re-created id must not inherit an audience)."""
        ...

    async def purge_user(self, tenant_id: str, user_id: str) -> int: ...


@runtime_checkable
class TeamRepository(Protocol):
    async def set_members(self, tenant_id: str, team_id: str, agent_ids: frozenset[str]) -> None:
        """Replace a team's members in one transaction (an empty set dissolves the team)."""
        ...

    async def add_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool: ...

    async def remove_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool: ...

    async def members(self, tenant_id: str, team_id: str) -> frozenset[str]: ...

    async def teams_of(self, tenant_id: str, agent_id: str) -> frozenset[str]: ...

    async def knows_agent(self, tenant_id: str, agent_id: str) -> bool:
        """Whether any team of the tenant lists this agent."""
        ...

    async def has_teams(self, tenant_id: str) -> bool: ...


class MemoryShares:
    """Process-local shares, indexed like the SQL tables (by memory and by reader)."""

    def __init__(self) -> None:
        self._by_memory: dict[tuple[ScopeKey, str], frozenset[str]] = {}
        self._by_reader: dict[tuple[str | None, str | None, str], set[tuple[ScopeKey, str]]] = defaultdict(set)

    async def set_audience(self, scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> None:
        old = self._by_memory.pop((scope, memory_id), frozenset())
        for agent in old:
            self._by_reader[(scope.tenant_id, scope.user_id, agent)].discard((scope, memory_id))
        if audience:
            self._by_memory[(scope, memory_id)] = frozenset(audience)
            for agent in audience:
                self._by_reader[(scope.tenant_id, scope.user_id, agent)].add((scope, memory_id))

    async def audience_of(self, scope: ScopeKey, memory_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        return {m: a for m in memory_ids if (a := self._by_memory.get((scope, m)))}

    async def shared_with(self, tenant_id: str, user_id: str, agent_id: str) -> dict[ScopeKey, frozenset[str]]:
        out: dict[ScopeKey, set[str]] = defaultdict(set)
        for agent in {agent_id, EVERY_AGENT}:
            for scope, memory_id in self._by_reader.get((tenant_id, user_id, agent), ()):
                out[scope].add(memory_id)
        return {k: frozenset(v) for k, v in out.items()}

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        doomed = [key for key in self._by_memory if key[1] in memory_ids]
        for scope, memory_id in doomed:
            await self.set_audience(scope, memory_id, frozenset(), 0.0)
        return len(doomed)

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        doomed = [key for key in self._by_memory if (key[0].tenant_id, key[0].user_id) == (tenant_id, user_id)]
        for scope, memory_id in doomed:
            await self.set_audience(scope, memory_id, frozenset(), 0.0)
        return len(doomed)


class MemoryTeams:
    def __init__(self) -> None:
        self._members: dict[tuple[str, str], frozenset[str]] = {}

    async def set_members(self, tenant_id: str, team_id: str, agent_ids: frozenset[str]) -> None:
        if agent_ids:
            self._members[(tenant_id, team_id)] = frozenset(agent_ids)
        else:
            self._members.pop((tenant_id, team_id), None)

    async def add_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        old = self._members.get((tenant_id, team_id), frozenset())
        self._members[(tenant_id, team_id)] = old | {agent_id}
        return agent_id not in old

    async def remove_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        old = self._members.get((tenant_id, team_id), frozenset())
        await self.set_members(tenant_id, team_id, old - {agent_id})
        return agent_id in old

    async def members(self, tenant_id: str, team_id: str) -> frozenset[str]:
        return self._members.get((tenant_id, team_id), frozenset())

    async def teams_of(self, tenant_id: str, agent_id: str) -> frozenset[str]:
        return frozenset(team for (t, team), agents in self._members.items() if t == tenant_id and agent_id in agents)

    async def knows_agent(self, tenant_id: str, agent_id: str) -> bool:
        return bool(await self.teams_of(tenant_id, agent_id))

    async def has_teams(self, tenant_id: str) -> bool:
        return any(t == tenant_id for t, _ in self._members)


def audience_rows(scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> list[tuple]:
    """The SQL rows of one share: (tenant_id, user_id, scope, memory_id, agent_id, shared_at)."""
    return [(scope.tenant_id, scope.user_id, str(scope), memory_id, agent, at) for agent in sorted(audience)]


def group_shares(rows: Iterable[tuple[str, str]]) -> dict[ScopeKey, frozenset[str]]:
    """(scope text, memory id) rows -> memory ids by scope (each distinct scope parsed once:
    parsing re-validates its ids, which costs more than the query)."""
    out: dict[str, set[str]] = defaultdict(set)
    for scope, memory_id in rows:
        out[scope].add(memory_id)
    return {ScopeKey.parse(k): frozenset(v) for k, v in out.items()}


def group_audience(rows: Iterable[tuple[str, str]]) -> dict[str, frozenset[str]]:
    """(memory id, agent id) rows -> audience by memory id."""
    out: dict[str, set[str]] = defaultdict(set)
    for memory_id, agent in rows:
        out[memory_id].add(agent)
    return {k: frozenset(v) for k, v in out.items()}


def membership_rows(tenant_id: str, membership: Mapping[str, frozenset[str]]) -> list[tuple[str, str, str]]:
    return [(tenant_id, team, agent) for team, agents in sorted(membership.items()) for agent in sorted(agents)]
