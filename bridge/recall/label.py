"""Recall stage "label": each chosen memory with where it came from and why it was visible.

Invariant 5 of DESIGN.md. The ScopeSet entry the hit was read through already says why the
scope is readable (own scope, a grant, a manifest and who injected it), so no second lookup.
"""

from __future__ import annotations


from adapters.base import Status
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from bridge.results import MemoryRef, RecalledMemory
from bridge.recall.context import BudgetedItem
from bridge.recall.context import RankedHit

from bridge.recall.context import RecallContext, RecallRuntime

__all__ = ["label", "label_all", "stage"]

_STATUS_TEXT = {status: status.value for status in Status}  # a dict hit, not Enum.value's descriptor


def _refs(hits: list[RankedHit]) -> tuple[MemoryRef, ...]:
    if not hits:
        return ()
    return tuple(MemoryRef(str(r.hit.scope), r.hit.memory.id) for r in hits)


def label_all(chosen: list[BudgetedItem], scopes: ScopeSet) -> list[RecalledMemory]:
    """A RecalledMemory per chosen item (only those: the budget has already decided).

    The ScopeSet entry of each place, and the place's string form and visibility, are looked up
    once per place, not once per item.
    """
    entries: dict[ScopeKey, ScopeEntry] = {}
    places: dict[ScopeKey, tuple[str, str]] = {}
    out = []
    for item in chosen:
        ranked = item.ranked
        hit = ranked.hit
        m = hit.memory
        entry = entries.get(hit.scope)
        if entry is None:
            entry = entries[hit.scope] = scopes.entry(hit.scope)
        place = places.get(m.scope)
        if place is None:
            place = places[m.scope] = (str(m.scope), m.scope.visibility.value)
        p = m.provenance
        # positional, in RecalledMemory's field order (keywords cost a third more, per item)
        out.append(RecalledMemory(
            m.id, place[0], place[1], m.kind, m.content, round(ranked.score, 6), entry.reason,
            f"{p.author_user_id}@{p.author_agent_id}", _STATUS_TEXT[m.status], entry.grant_id,
            entry.injected_by or p.injected_by, p.derived_from, _refs(item.conflicts_with), _refs(item.duplicates), m.expires_at,
        ))
    return out


def label(item: BudgetedItem, scopes: ScopeSet) -> RecalledMemory:
    return label_all([item], scopes)[0]


def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    scopes = ctx.scopes
    assert scopes is not None
    ctx.items = label_all(ctx.chosen, scopes)
