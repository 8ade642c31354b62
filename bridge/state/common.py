"""Logic every state store shares, written once: the audit-action check, the walk up a manifest's
re-injection chain, the SQL rows of shares and team membership and their grouping back into
records. No store is touched here beyond the `get` a walk is given."""

from __future__ import annotations

from collections import defaultdict
from typing import Awaitable, Callable, Iterable, Mapping

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput, QuotaExceeded
from bridge.state.records import AUDIT_ACTIONS, InjectionManifest, QuotaLimits, Usage

#: How far up a re-injection chain a walk goes: re-injection is one level deep today, and the bound
#: turns a corrupt loop of parent ids into a short chain instead of a hang.
MAX_CHAIN = 64


def check_audit_action(action: str) -> None:
    """Every store refuses an action the audit vocabulary does not know, before writing anything."""
    if action not in AUDIT_ACTIONS:
        raise InvalidInput(f"unknown audit action {action!r}")


async def walk_chain(get: Callable[[str], Awaitable[InjectionManifest | None]], manifest: InjectionManifest) -> list[InjectionManifest]:
    """The manifests `manifest` was re-injected from, nearest first, up to its root (a missing
    parent ends the walk: what is gone authorises nothing)."""
    out: list[InjectionManifest] = []
    parent_id = manifest.parent_manifest_id
    while parent_id is not None and len(out) < MAX_CHAIN:
        parent = await get(parent_id)
        if parent is None:
            break
        out.append(parent)
        parent_id = parent.parent_manifest_id
    return out


#: The `user_id` of share rows of a place no single user owns (a team's narrowed memory): the
#: listed agents read it acting for any user of the tenant (no user id can be "*").
ANY_USER = "*"


def audience_rows(scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> list[tuple]:
    """The SQL rows of one share: (tenant_id, user_id, scope, memory_id, agent_id, shared_at)."""
    return [(scope.tenant_id, scope.user_id or ANY_USER, str(scope), memory_id, agent, at) for agent in sorted(audience)]


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


def check_quota(level: str, held: Usage, need: Usage, limits: QuotaLimits, tenant_id: str, user_id: str) -> None:
    """Raise `QuotaExceeded` if `held + need` breaks `limits` (the message names the quota)."""
    who = f"tenant {tenant_id}" if level == "tenant" else f"user {user_id} of tenant {tenant_id}"
    for measure, have, want, cap in (("memories", held.memories, need.memories, limits.max_memories), ("bytes", held.bytes, need.bytes, limits.max_bytes)):
        if cap is not None and have + want > cap:
            raise QuotaExceeded(
                f"storage quota exceeded: {who} holds {have} {measure} of {cap}; this write needs {want} more; nothing was written "
                "(forget memories, let them expire, or ask the operator to raise the quota)",
                level=level, measure=measure, used=have, requested=want, limit=cap,
            )
