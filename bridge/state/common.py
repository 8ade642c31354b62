"""Logic every state store shares, written once: the SQL rows of shares and team membership and
their grouping back into records. Pure functions of rows; no store is touched here."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping

from adapters.scopes import ScopeKey


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
