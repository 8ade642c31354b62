"""Recall stage "guard" — the second wall: every hit must come from the ScopeSet the policy built, or it is dropped.

The backend query is the first wall (authorisation pushed into the search). This guard never
widens anything; it exists so that an adapter bug, a mis-tagged row or a backend that ignored a
filter is caught, removed and reported as an alarm instead of reaching a prompt.
"""

from __future__ import annotations

import logging

from adapters.base import Hit, Status
from adapters.scopes import ScopeSet

from bridge.recall.context import GuardAlarm
from bridge.recall.context import RecallContext, RecallRuntime

log = logging.getLogger("viking_bridge")


def guard_hits(
    hits: tuple[Hit, ...] | list[Hit],
    scopes: ScopeSet,
    *,
    statuses: frozenset[Status] | None = None,
    kinds: frozenset[str] | None = None,
) -> tuple[list[Hit], list[GuardAlarm]]:
    """(kept, alarms): the checks, in order, for every hit; the first that fails names the alarm.

    One ScopeSet lookup per hit (after the stored-scope check, so a hit whose scope is not even
    hashable is still an alarm, not a crash); the checks themselves are unchanged.
    """
    kept: list[Hit] = []
    alarms: list[GuardAlarm] = []
    lookup = scopes.get
    for hit in hits:
        memory = hit.memory
        scope = hit.scope
        if scope is not memory.scope and scope != memory.scope:
            reason = "hit is tagged with a scope other than the one the record is stored in"
        elif (entry := lookup(scope)) is None:
            reason = "scope is not in the request's ScopeSet"
        elif entry.memory_ids is not None and memory.id not in entry.memory_ids:
            reason = "memory is not in the injection manifest for this scope"
        elif statuses is not None and memory.status not in statuses:
            reason = f"status {memory.status.value} was not asked for"
        elif kinds is not None and memory.kind not in kinds:
            reason = f"kind {memory.kind} was not asked for"
        else:
            kept.append(hit)
            continue
        alarms.append(GuardAlarm(memory.id, str(scope), str(memory.scope), reason))
    return kept, alarms


def drop_expired(hits: list[Hit], now: float, *, backend_filters: bool) -> tuple[list[Hit], list[GuardAlarm], int]:
    """(kept, alarms, dropped): expired hits never pass. From a backend that declares
    `expiry_in_query` an expired hit is a broken contract (an alarm); from one that cannot
    filter expiry in its query it is the known shortfall: dropped and counted, never silently."""
    kept: list[Hit] = []
    gone: list[Hit] = []
    for h in hits:  # one test per hit, each list in the order the hits came
        (gone if h.memory.expired(now) else kept).append(h)
    if backend_filters:
        return kept, [GuardAlarm(h.memory.id, str(h.scope), str(h.memory.scope), "memory had expired") for h in gone], 0
    return kept, [], len(gone)


async def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    """Drop (and audit, and log) every hit outside the ScopeSet or the asked statuses/kinds, and
    every expired hit (at the search's own `now`)."""
    assert ctx.result is not None and ctx.scopes is not None and ctx.query is not None
    ctx.hits, ctx.alarms = guard_hits(ctx.result.hits, ctx.scopes, statuses=ctx.query.statuses, kinds=ctx.op.kinds)
    filters = getattr(getattr(rt.backend, "capabilities", None), "expiry_in_query", True)  # undeclared: it should have
    ctx.hits, expired_alarms, ctx.expired_dropped = drop_expired(ctx.hits, ctx.query.at(), backend_filters=filters)
    ctx.alarms += expired_alarms
    if ctx.expired_dropped:
        log.warning("guard: dropped %d expired hit(s) from %s, which cannot exclude expiry in its query", ctx.expired_dropped, rt.backend.name)
    for alarm in ctx.alarms:
        log.error("guard alarm: %s dropped memory %s from %s (%s)", ctx.identity.principal, alarm.memory_id, alarm.stored_scope, alarm.reason)
        await rt.state.audit.append(
            ctx.identity, "guard_alarm", memory_ids=[alarm.memory_id], scopes=[alarm.stored_scope, alarm.claimed_scope],
            detail={"reason": alarm.reason, "backend": rt.backend.name},
        )
