"""Recall and sharing: the reader's teams and the memories shared with it join its
ScopeSet (stage "scopes"), and each chosen memory's `memory_type` and `visible_to` are decided
(stage "visibility", before "label", which builds every item once with them).

Both are state lookups by index (shares by reader; audiences by memory), never a scan; what a
share makes readable is an entry with exact `memory_ids`, enforced inside every backend's query.
It never widens anything the policy did not decide (`bridge/policy/sharing.py`).
"""

from __future__ import annotations

from adapters.scopes import ScopeKey, ScopeSet
from bridge.policy.sharing import has_audience, memory_type_of, with_shares_and_teams
from bridge.recall.context import BudgetedItem, PlaceVisibility
from bridge.vocabulary import Purpose
from identity.model import MemoryIdentity

from bridge.recall.context import RecallContext, RecallRuntime

__all__ = ["readable_with_shares", "decide_visibility", "stage"]


async def readable_with_shares(rt: RecallRuntime, identity: MemoryIdentity, purpose: Purpose, base: ScopeSet) -> ScopeSet:
    """`base` plus the reader's teams and exactly the memories shared with it (one read of the
    state, by index; the entries' `memory_ids` are enforced inside every backend's query)."""
    reach = await rt.state.shares.for_reader(identity.tenant_id, identity.user_id, identity.agent_id)
    return with_shares_and_teams(rt.policy, identity, purpose, base, reach.shared, reach.teams)


_UNSEEN = object()  # a place not looked at yet (None: a place with no decision)


async def decide_visibility(rt: RecallRuntime, scopes: ScopeSet, chosen: list[BudgetedItem]) -> dict[ScopeKey, PlaceVisibility]:
    """Per place the chosen memories were stored in: its `PlaceVisibility` (the memory type from
    the entry it was read through; one audience lookup per place that has audiences, for the
    chosen memories of that place only). A place outside `scopes` gets no decision."""
    places: dict[ScopeKey, PlaceVisibility | None] = {}
    wanted: dict[ScopeKey, list[str]] = {}
    for item in chosen:
        hit = item.ranked.hit
        # the hit's key, which the guard has checked equals the memory's: the ScopeSet's own
        # object, found in the dict without the field-by-field comparison an equal copy costs
        key = hit.scope
        place = places.get(key, _UNSEEN)
        if place is _UNSEEN:
            entry = scopes.get(key)  # None never happens: the guard dropped every hit outside the set
            place = places[key] = None if entry is None else PlaceVisibility(
                entry.key, memory_type_of(entry.key, entry.source).value, {} if has_audience(entry.key) else None)
        if place is not None and place.audiences is not None:
            wanted.setdefault(key, []).append(hit.memory.id)
    for key, ids in wanted.items():
        place = places[key]
        assert place is not None and place.audiences is not None
        place.audiences = await rt.state.shares.audience_of(place.key, ids)
    return {key: place for key, place in places.items() if place is not None}


async def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    assert ctx.scopes is not None
    ctx.visibility = await decide_visibility(rt, ctx.scopes, ctx.chosen)
