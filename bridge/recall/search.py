"""Recall stage "search": one backend search bound to the ScopeSet, failing closed.

A scope that could not be searched makes the recall raise `RecallIncomplete` carrying every
failed scope and the adapter's reasons (the caller's refusal audit records it) — unless the
caller asked for `allow_partial`, in which case the result is marked partial. An adapter that
raises instead of reporting per-scope failures is treated the same way: closed, never empty.
"""

from __future__ import annotations


from adapters.base import SearchQuery
from adapters.errors import BackendError, TenantNotRouted
from bridge.errors import RecallIncomplete

from bridge.recall.context import RecallContext, RecallRuntime

__all__ = ["stage"]


async def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    assert ctx.scopes is not None
    # `now`: the bridge's clock; every adapter excludes memories expired by then inside its query
    ctx.query = SearchQuery(ctx.scopes, ctx.op.query, limit=rt.limits.candidate_limit, kinds=ctx.op.kinds, now=rt.clock())
    try:
        result = await rt.store.search(ctx.query)  # raw: the guard applies the liveness rule and reports a backend that broke it
    except TenantNotRouted:  # a refusal, not an outage: no retry can succeed, so no "try again" 503
        raise
    except BackendError as exc:  # any backend failure of the whole fan-out: closed, typed, audited
        keys = tuple(ctx.scopes.keys)
        raise RecallIncomplete(f"recall failed closed: the backend could not search any of {len(keys)} scope(s): {exc}", keys, (str(exc),)) from exc
    failed = tuple(str(k) for k in result.failed_scopes)
    if failed and not ctx.op.allow_partial:
        raise RecallIncomplete(
            f"recall failed closed: {len(failed)} scope(s) could not be searched: {', '.join(failed)}",
            result.failed_scopes, tuple(result.failure_reasons),
        )
    ctx.result, ctx.failed = result, failed
