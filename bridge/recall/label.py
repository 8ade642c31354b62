"""Recall stage "label": each chosen memory with where it came from and why it was visible.

Invariant 5 of DESIGN.md. The ScopeSet entry the hit was read through already says why the
scope is readable (own scope, a grant, a manifest and who injected it), so no second lookup.
Each item is built once, whole: its `memory_type` and `visible_to` come from the "visibility"
stage's decision for its place, which runs first (an item is never patched after it is made).
"""

from __future__ import annotations


from adapters.base import Status
from adapters.scopes import ScopeKey, ScopeSet
from bridge.policy.sharing import EVERY_AGENT
from bridge.results import MemoryRef, RecalledMemory
from bridge.recall.context import BudgetedItem
from bridge.recall.context import PlaceVisibility, RankedHit

from bridge.recall.context import RecallContext, RecallRuntime

__all__ = ["label", "label_all", "stage"]

_STATUS_TEXT = {status: status.value for status in Status}  # a dict hit, not Enum.value's descriptor
#: RecalledMemory's defaults, for an item whose place has no visibility decision
_DEFAULT_TYPE, _EVERY = "private", (EVERY_AGENT,)


def _refs(hits: list[RankedHit]) -> tuple[MemoryRef, ...]:
    if not hits:
        return ()
    return tuple(MemoryRef(str(r.hit.scope), r.hit.memory.id) for r in hits)


def label_all(chosen: list[BudgetedItem], scopes: ScopeSet, visibility: dict[ScopeKey, PlaceVisibility] | None = None) -> list[RecalledMemory]:
    """A RecalledMemory per chosen item (only those: the budget has already decided).

    The ScopeSet entry of each place, the place's string form and visibility, and its
    `PlaceVisibility` (from `visibility`; none: RecalledMemory's defaults) are looked up once per
    place, not once per item.
    """
    visibility = visibility or {}
    # place -> (its entry, text, visibility and decision); a place is the memory's scope, which
    # the guard has made the hit's scope too (a hit tagged otherwise never reaches the budget)
    places: dict[ScopeKey, tuple] = {}
    out = []
    for item in chosen:
        ranked = item.ranked
        m = ranked.hit.memory
        place = places.get(m.scope)
        if place is None:
            key = m.scope
            place = places[key] = (scopes.entry(key), str(key), key.visibility.value, visibility.get(key))
        entry, text, visible, decided = place
        if decided is None:
            memory_type, visible_to = _DEFAULT_TYPE, _EVERY
        else:
            memory_type, visible_to = decided.memory_type, decided.visible_to(m.id)
        p = m.provenance
        # positional, in RecalledMemory's field order (keywords cost a third more, per item)
        out.append(RecalledMemory(
            m.id, text, visible, m.kind, m.content, round(ranked.score, 6), entry.reason,
            f"{p.author_user_id}@{p.author_agent_id}", _STATUS_TEXT[m.status], entry.grant_id,
            entry.injected_by or p.injected_by, p.derived_from, _refs(item.conflicts_with), _refs(item.duplicates), m.expires_at,
            memory_type, visible_to,
        ))
    return out


def label(item: BudgetedItem, scopes: ScopeSet) -> RecalledMemory:
    return label_all([item], scopes)[0]


def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    scopes = ctx.scopes
    assert scopes is not None
    ctx.items = label_all(ctx.chosen, scopes, ctx.visibility)
