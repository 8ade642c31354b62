"""Recall stage "label": each chosen memory with where it came from and why it was visible.

Invariant 5 of DESIGN.md. The ScopeSet entry the hit was read through already says why the
scope is readable (own scope, a grant, a manifest and who injected it), so no second lookup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.scopes import ScopeSet
from bridge.models import MemoryRef, RecalledMemory
from bridge.recall.budget import BudgetedItem

if TYPE_CHECKING:
    from bridge.recall.context import RecallContext
    from bridge.runtime import BridgeRuntime

__all__ = ["label", "stage"]


def label(item: BudgetedItem, scopes: ScopeSet) -> RecalledMemory:
    hit = item.ranked.hit
    m = hit.memory
    entry = scopes.entry(hit.scope)
    return RecalledMemory(
        memory_id=m.id,
        scope=str(m.scope),
        visibility=m.scope.visibility.value,
        kind=m.kind,
        content=m.content,
        score=round(item.ranked.score, 6),
        why_visible=entry.reason,
        grant_id=entry.grant_id,
        author=f"{m.provenance.author_user_id}@{m.provenance.author_agent_id}",
        injected_by=entry.injected_by or m.provenance.injected_by,
        derived_from=m.provenance.derived_from,
        status=m.status.value,
        conflicts_with=tuple(MemoryRef(scope=str(c.hit.scope), memory_id=c.hit.memory.id) for c in item.conflicts_with),
        duplicates=tuple(MemoryRef(scope=str(d.hit.scope), memory_id=d.hit.memory.id) for d in item.duplicates),
    )


def stage(rt: "BridgeRuntime", ctx: "RecallContext") -> None:
    scopes = ctx.scopes
    assert scopes is not None
    ctx.items = [label(item, scopes) for item in ctx.chosen]
