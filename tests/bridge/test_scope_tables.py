"""Every table keyed by scope class covers every scope class.

A stage that looks a scope up in a table with no entry for it crashes (a raw KeyError, an
HTTP 500) the first time a memory of that scope reaches it: the budget stage's specificity
table once had no team or task entry, so a team or task memory conflicting with another
memory of the same kind and topic crashed every recall that saw both. The walk below reads
every module of `bridge/` and checks each module-level mapping whose keys are scope classes
(and mappings nested one level in them, like the per-purpose weights), so a scope class added
to `Visibility` later fails here until every table says what it means for it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping

import bridge
from adapters.base import Hit, Provenance, Status, StoredMemory
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet, Visibility
from bridge.recall.budget import BudgetConfig, assemble
from bridge.recall.rank import rank_hits
from bridge.vocabulary import Purpose
from tests.kit import make_identity

NOW = 1_800_000_000.0


def _scope_tables():
    for info in pkgutil.walk_packages(bridge.__path__, "bridge."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not isinstance(value, Mapping):
                continue
            yield from _keyed_by_scope(f"{info.name}.{name}", value)


def _keyed_by_scope(where: str, table: Mapping):
    if table and all(isinstance(k, Visibility) for k in table):
        yield where, table
    for k, v in table.items():
        if isinstance(v, Mapping) and v and all(isinstance(kk, Visibility) for kk in v):
            yield f"{where}[{k!r}]", v


def test_the_walk_finds_the_known_tables():
    # the walk must see the tables it is meant to guard, or the check below proves nothing
    names = {where for where, _ in _scope_tables()}
    assert "bridge.recall.budget._SPECIFICITY" in names
    assert "bridge.policy.config.PROMOTION_REACH" in names


def test_every_table_keyed_by_scope_class_covers_every_scope_class():
    missing = {where: sorted(v.value for v in set(Visibility) - set(table)) for where, table in _scope_tables()}
    missing = {where: gaps for where, gaps in missing.items() if gaps}
    assert not missing, f"tables with no entry for some scope classes: {missing}"


def _stored(mid: str, scope: ScopeKey, text: str) -> StoredMemory:
    prov = Provenance("alice", "coder")
    return StoredMemory(mid, scope, text, "decision", Status.ACTIVE, 1.0, prov, "alice", {"topic": "framework"}, NOW, NOW)


def test_a_team_or_task_memory_in_a_conflict_does_not_crash_the_budget_stage():
    ws = ScopeKey.workspace("acme", "alpha")
    for scope in (ScopeKey.team("acme", "red"), ScopeKey.task("acme", "coder", "alice", "t1")):
        scope_set = ScopeSet((ScopeEntry(scope, 0.98), ScopeEntry(ws, 0.95)))
        hits = [Hit(_stored("w", ws, "Use Vue."), ws, 0.9), Hit(_stored("n", scope, "Use Next.js."), scope, 0.5)]
        chosen, _ = assemble(rank_hits(hits, scope_set, Purpose.CHAT, now=NOW), BudgetConfig(), presorted=True)
        # the team's / task's memory is the narrower one: it wins, the workspace one is its source
        assert [c.ranked.hit.memory.id for c in chosen] == ["n"], scope
        assert [r.hit.memory.id for r in chosen[0].conflicts_with] == ["w"], scope


async def test_recall_with_a_task_memory_conflicting_with_a_workspace_one(bridge):
    alice = make_identity("alice", agent="coder").model_copy(update={"task_id": "t1"})
    ws = await bridge.remember(alice, "The frontend framework is Vue", "decision", visibility="workspace", metadata={"topic": "framework"})
    task = await bridge.remember(alice, "For this task the frontend framework is Next.js", "decision", visibility="task",
                                 metadata={"topic": "framework"})
    result = await bridge.recall(alice, "frontend framework")
    ids = [i.memory_id for i in result.items]
    assert task.memory_id in ids and ws.memory_id not in ids
    (item,) = [i for i in result.items if i.memory_id == task.memory_id]
    assert [c.memory_id for c in item.conflicts_with] == [ws.memory_id]


def test_a_team_or_task_scope_labels_no_store_item():
    # a whole-store search reads a team or task scope for an identity in one; what it finds
    # there is no store item, whatever its content looks like (and no KeyError)
    from bridge.doors.langgraph.namespaces import labels_scope

    for scope in (ScopeKey.team("acme", "red"), ScopeKey.task("acme", "coder", "alice", "t1")):
        assert labels_scope(("memories", "alice"), scope) is False
        assert labels_scope(("team", "red"), scope) is False
