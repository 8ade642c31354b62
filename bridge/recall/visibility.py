"""Recall and sharing: the reader's teams and the memories shared with it join its
ScopeSet (stage "scopes"), and each labelled item gets its `memory_type` and `visible_to`
(stage "visibility", after "label").

Both are state lookups by index (shares by reader; audiences by memory), never a scan; what a
share makes readable is an entry with exact `memory_ids`, enforced inside every backend's query.
It never widens anything the policy did not decide (`bridge/policy/sharing.py`).
"""

from __future__ import annotations


from adapters.scopes import ScopeEntry, ScopeSet
from bridge.results import RecalledMemory
from bridge.policy.sharing import has_audience, memory_type_of, visible_to_of, with_shares_and_teams
from bridge.vocabulary import Purpose
from identity.model import MemoryIdentity

from bridge.recall.context import RecallContext, RecallRuntime

__all__ = ["readable_with_shares", "label_visibility", "stage"]


async def readable_with_shares(rt: RecallRuntime, identity: MemoryIdentity, purpose: Purpose, base: ScopeSet) -> ScopeSet:
    """`base` plus the reader's teams and exactly the memories shared with it (two indexed
    state lookups; the entries' `memory_ids` are enforced inside every backend's query)."""
    shares = await rt.state.shares.shared_with(identity.tenant_id, identity.user_id, identity.agent_id)
    teams = await rt.state.teams.teams_of(identity.tenant_id, identity.agent_id)
    return with_shares_and_teams(rt.policy, identity, purpose, base, shares, teams)


async def label_visibility(rt: RecallRuntime, scopes: ScopeSet, items: list[RecalledMemory]) -> list[RecalledMemory]:
    """Each item's `memory_type` (from the entry it was read through) and `visible_to` (one
    audience lookup per agent place among the items).

    Both depend on the entry alone, except an agent place's audience, which is per memory: so
    each place is decided once (its entry, its memory type, whether it has an audience), and
    the items of a place only copy that decision."""
    if not items:
        return items
    # place text -> (entry, memory type, has an audience); only the places the items came from
    places: dict[str, tuple[ScopeEntry, str, bool] | None] = {}
    for item in items:
        if item.scope not in places:
            places[item.scope] = None
    for entry in scopes:
        text = str(entry.key)
        if text in places:
            places[text] = (entry, memory_type_of(entry.key, entry.source).value, has_audience(entry.key))
    wanted: dict[str, list[str]] = {}
    for item in items:
        place = places[item.scope]
        if place is not None and place[2]:
            wanted.setdefault(item.scope, []).append(item.memory_id)
    audiences = {scope: await rt.state.shares.audience_of(places[scope][0].key, ids) for scope, ids in wanted.items()}  # type: ignore[index]
    for item in items:
        place = places[item.scope]
        if place is None:  # pragma: no cover - the guard dropped every hit outside the set
            continue
        entry, kind, audienced = place
        if kind != item.memory_type:
            # the items were built by the label stage of this recall and are not shared yet: set
            # in place (dataclasses.replace costs several microseconds per item on the hot path)
            object.__setattr__(item, "memory_type", kind)
        if audienced:
            audience = audiences.get(item.scope, {}).get(item.memory_id, frozenset())
            object.__setattr__(item, "visible_to", visible_to_of(entry.key, audience))
    return items


async def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    assert ctx.scopes is not None
    ctx.items = await label_visibility(rt, ctx.scopes, ctx.items)
