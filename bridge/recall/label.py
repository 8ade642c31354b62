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

    Everything an item takes from its place — the ScopeSet entry's reason, grant and injector,
    the place's string form and visibility, its memory type, and its `visible_to` when the place
    has no per-memory audience — is worked out once per place, not once per item.
    """
    visibility = visibility or {}
    # place -> what its items share; a place is the memory's scope, which the guard has made the
    # hit's scope too (a hit tagged otherwise never reaches the budget). Looked up by the hit's
    # key: the adapters tag a hit with the ScopeSet's own key object, while a record may carry an
    # equal copy, which a dict compares field by field (~0.2 us) where the same object is found
    # at once.
    places: dict[ScopeKey, tuple] = {}
    out = []
    add = out.append
    for item in chosen:
        ranked = item.ranked
        hit = ranked.hit
        m = hit.memory
        place = places.get(hit.scope)
        if place is None:
            key = hit.scope
            entry = scopes.entry(key)
            decided = visibility.get(key)
            if decided is None:
                memory_type, every = _DEFAULT_TYPE, _EVERY
            else:  # a place without audiences answers one visible_to for all its items
                memory_type, every = decided.memory_type, (decided.visible_to(m.id) if decided.audiences is None else None)
            place = places[key] = (str(key), key.visibility.value, entry.reason, entry.grant_id, entry.injected_by, memory_type, every, decided)
        text, visible, reason, grant_id, injected_by, memory_type, visible_to, decided = place
        if visible_to is None:
            visible_to = decided.visible_to(m.id)
        p = m.provenance
        conflicts, duplicates = item.conflicts_with, item.duplicates
        # positional, in RecalledMemory's field order (keywords cost a third more, per item)
        add(RecalledMemory(
            m.id, text, visible, m.kind, m.content, round(ranked.score, 6), reason,
            f"{p.author_user_id}@{p.author_agent_id}", _STATUS_TEXT[m.status], grant_id,
            injected_by or p.injected_by, p.derived_from, _refs(conflicts) if conflicts else (), _refs(duplicates) if duplicates else (),
            m.expires_at, memory_type, visible_to,
        ))
    return out


def label(item: BudgetedItem, scopes: ScopeSet) -> RecalledMemory:
    return label_all([item], scopes)[0]


def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    scopes = ctx.scopes
    assert scopes is not None
    ctx.items = label_all(ctx.chosen, scopes, ctx.visibility)
