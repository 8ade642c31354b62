"""One recall as named stages over one context object:

    scopes -> search -> guard -> rank -> budget -> visibility -> label -> render -> audit

    scopes   bridge/recall/scopes.py   policy: default scopes + verified grants + a live manifest
    search   bridge/recall/search.py   backend.search(ScopeSet, query); fail closed
    guard    bridge/recall/guard.py    the second wall: drop + audit any hit outside the ScopeSet
    rank     bridge/recall/rank.py     semantic x scope weight x confidence x freshness x ...
    budget   bridge/recall/budget.py   token budget, dedup, quotas, conflicts
    visibility bridge/recall/visibility.py  memory_type and visible_to per chosen place (seed 000)
    label    bridge/recall/label.py    each item, built once: provenance, "why visible", visibility
    render   bridge/recall/render.py   the context block for a prompt
    audit    (here)                    who recalled which memory ids through which grant

A stage is a function (sync or async) of (runtime, context); `run_recall(..., timings={})`
records each stage's nanoseconds (and "result": building the RecallResult) for
`benchmarks/local_recall.py`.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from bridge.results import RecallResult
from bridge.operations import Recall
from bridge.recall import budget, guard, label, rank, render, scopes, search, visibility
from bridge.recall.config import BudgetConfig
from bridge.recall.budget import min_item_tokens
from bridge.recall.context import RecallContext, RecallRuntime
from bridge.errors import InvalidInput
from identity.model import MemoryIdentity


__all__ = ["STAGES", "run_recall"]


async def audit_stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    """The recall's audit row. Through `append_read` where the state has it: the SQLite and
    PostgreSQL states group-commit read rows off the critical path (bridge/state/read_rows.py says
    what is durable when the recall returns) and `audit_seq` is then None; otherwise `append`,
    committed before the recall returns."""
    assert ctx.scopes is not None
    audit = rt.state.audit
    append = getattr(audit, "append_read", None) or audit.append
    ctx.audit_seq = await append(
        ctx.identity, "recall",
        memory_ids=[i.memory_id for i in ctx.items],
        scopes=[i.scope for i in ctx.items],
        grant_ids=[i.grant_id for i in ctx.items],
        detail={"purpose": ctx.op.purpose.value, "searched": list(ctx.searched()), "failed": list(ctx.failed)},
    )


STAGES: tuple[tuple[str, Callable[[RecallRuntime, RecallContext], Any]], ...] = (
    ("scopes", scopes.stage),
    ("search", search.stage),
    ("guard", guard.stage),
    ("rank", rank.stage),
    ("budget", budget.stage),
    ("visibility", visibility.stage),  # memory_type / visible_to per place, so a reader sees how each was shared
    ("label", label.stage),  # every item built once, with its place's visibility
    ("render", render.stage),
    ("audit", audit_stage),
)


def _budget_for(rt: RecallRuntime, op: Recall) -> BudgetConfig:
    if op.budget_tokens is None:
        return rt.budget
    b = rt.budget
    config = BudgetConfig(op.budget_tokens, b.per_item_overhead, b.kind_quotas, b.max_items)
    if op.budget_tokens < min_item_tokens(config):
        raise InvalidInput(f"budget_tokens must be at least {min_item_tokens(config)} (one item with its label)")
    return config


async def run_recall(rt: RecallRuntime, identity: MemoryIdentity, op: Recall, *, timings: dict[str, int] | None = None) -> RecallResult:
    ctx = RecallContext(identity, op, _budget_for(rt, op))
    if timings is None:
        for _, stage in STAGES:
            pending = stage(rt, ctx)
            if pending is not None:
                await pending
        return ctx.to_result()
    for name, stage in STAGES:
        start = time.perf_counter_ns()
        pending = stage(rt, ctx)
        if pending is not None:
            await pending
        timings[name] = timings.get(name, 0) + time.perf_counter_ns() - start
    start = time.perf_counter_ns()
    result = ctx.to_result()
    timings["result"] = timings.get("result", 0) + time.perf_counter_ns() - start
    return result
