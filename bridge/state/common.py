"""Logic every state store shares, written once: the audit-action check, the walk up a manifest's
re-injection chain, the SQL rows of shares and team membership and their grouping back into
records, and the marks of audit rows a migration carries. No store is touched here beyond the
`get` a walk is given."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput, QuotaExceeded
from bridge.state.records import AUDIT_ACTIONS, AuditRecord, InjectionManifest, QuotaLimits, Share, Usage

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


#: The detail key a carried audit row is marked with (bridge/migrate/state.py).
CARRIED = "carried"


def carried_detail(detail: Mapping[str, Any], origin: str, seq: int) -> dict[str, Any]:
    """`detail` marked as carried from state `origin`, where it was row `seq`; a row carried
    before (a second migration) keeps that earlier mark under `earlier`, so its whole way is on it."""
    mark: dict[str, Any] = {"from": origin, "seq": seq}
    if CARRIED in detail:
        mark["earlier"] = detail[CARRIED]
    return {**detail, CARRIED: mark}


def not_yet_carried(rows: Sequence[AuditRecord], present: Iterable[int]) -> list[AuditRecord]:
    """The rows whose origin seq the target has not recorded yet, each once (a batch that names
    one row twice carries it once)."""
    seen = set(present)
    out = []
    for row in rows:
        if row.event.seq not in seen:
            seen.add(row.event.seq)
            out.append(row)
    return out


def share_records(rows: Iterable[tuple[str, str, str, float]]) -> list[Share]:
    """(scope text, memory id, agent id, shared_at) rows -> one `Share` per memory, in scope and
    memory order (the latest shared_at of its rows)."""
    audience: dict[tuple[str, str], set[str]] = defaultdict(set)
    at: dict[tuple[str, str], float] = {}
    for scope, memory_id, agent, shared_at in rows:
        audience[(scope, memory_id)].add(agent)
        at[(scope, memory_id)] = max(at.get((scope, memory_id), 0.0), float(shared_at))
    return [Share(ScopeKey.parse(scope), memory_id, frozenset(agents), at[(scope, memory_id)]) for (scope, memory_id), agents in sorted(audience.items())]
