"""Recall stage "rank": semantic x scope_weight x confidence x freshness x status x kind.

Permission is NOT a score here: every hit reaching this module is already authorised. A scope
weight (from the ScopeSet entry the policy built) orders *permitted* memories — your own before
the workspace's before the tenant's. Everything else this stage weighs is in `RankingConfig`.

Relevance floors: a hit whose score is 0 (no semantic overlap at all) is never returned; a hit
whose similarity is below `RankingConfig.min_similarity` — by default the store embedder's
calibrated `recall_floor`, the highest value that loses no hit@k on benchmarks/recall_quality.py,
so "what is the capital of France?" does not bring back the user's unrelated memories — is
dropped; `RankingConfig.min_score` floors the product (default 0.0). A recall that states its own
`min_score` states the whole floor: neither default applies (the LangGraph store passes 0.0,
"no relevance floor", as BaseStore's search promises).

Purpose orderings (seed 003 "Recall policy"), a two-level lexicographic order applied by the
stage after the product (`lead_first`): each purpose names its lead class — chat: the user's own
profile and preferences; coding: the current project's (workspace) facts and decisions. A hit of
the lead class that is *relevant* — its semantic score at least `lead_band` (0.25) of the best
semantic score of this recall — comes before every other hit; within each level the product
decides. Why not only weights: a product lets semantic similarity swamp the purpose weights
(measured: the demo's workspace decision ranked below an unrelated tenant event), and a bigger
weight just moves the crossing point. Why the band: a lead-class memory barely related to the
query must not push relevant ones out of the budget. `explain()` keeps every factor (the seed's
scope and kind weights included) and adds `lead` = 1.0 for a hit promoted by its purpose.
`rank_hits` itself stays the plain product order.
"""

from __future__ import annotations

import math
import time
from operator import attrgetter

from adapters.base import Hit, Status
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.embedding import recall_floor

from bridge.recall.config import FreshnessConfig, RankingConfig
from bridge.recall.context import RankedHit
from bridge.recall.context import RecallContext, RecallRuntime
from bridge.recall.time_aware import time_aware
from bridge.vocabulary import Purpose

_STATUS_WEIGHT = {Status.ACTIVE: 1.0, Status.PENDING: 0.5, Status.SUPERSEDED: 0.3, Status.FORGOTTEN: 0.0}


def freshness(created_at: float, kind: str, now: float, config: FreshnessConfig) -> float:
    age_days = max(0.0, (now - created_at) / 86400.0 - config.grace_days)
    half_life = config.half_life_days * (config.slow_factor if kind in config.slow_kinds else 1.0)
    return max(config.floor, math.pow(0.5, age_days / half_life))


def rank_hits(
    hits: list[Hit],
    scopes: ScopeSet,
    purpose: Purpose,
    config: RankingConfig | None = None,
    *,
    now: float | None = None,
    min_score: float | None = None,
    min_similarity: float = 0.0,
) -> list[RankedHit]:
    """Hits scored and sorted best first (ties by id, so equal inputs give equal orders);
    hits at or below the relevance floor are dropped."""
    config = config or _DEFAULT
    now = time.time() if now is None else now
    floor = config.min_score if min_score is None else min_score
    fconf = config.freshness
    weights = config._by_value[purpose]  # type: ignore[attr-defined]
    other = config.other_kind_weight
    # `freshness()` inlined, term for term (max(a, b) written as the comparison it makes)
    grace, fresh_floor, slow_kinds = fconf.grace_days, fconf.floor, fconf.slow_kinds
    half_life, slow_half_life = fconf.half_life_days * 1.0, fconf.half_life_days * fconf.slow_factor
    pow_ = math.pow
    scope_weight: dict[ScopeKey, float] = {}  # a handful of places, each looked up once
    ranked: list[RankedHit] = []
    scores: set[float] = set()  # to tell whether two scores tie
    for hit in hits:
        semantic = hit.score
        if semantic < min_similarity:
            continue
        m = hit.memory
        scope = hit.scope
        weight = scope_weight.get(scope)
        if weight is None:
            weight = scope_weight[scope] = scopes.entry(scope).weight
        kind = m.kind
        age = (now - m.created_at) / 86400.0 - grace
        # inside the grace period (most candidates, usually) the decay is 0.5 ** 0 = 1.0 exactly:
        # FreshnessConfig refuses a half-life that is not positive, so no per-hit call is needed
        fresh = pow_(0.5, age / (slow_half_life if kind in slow_kinds else half_life)) if age > 0.0 else 1.0
        factors = (
            semantic if semantic > 0.0 else 0.0,
            weight,
            m.confidence,
            fresh if fresh > fresh_floor else fresh_floor,
            _STATUS_WEIGHT[m.status],
            weights.get(kind, other),
        )
        # math.prod(factors), multiplied out: the same products in the same order (prod starts
        # from 1, and 1 * x is x), without a call per hit
        a, b, c, d, e, f = factors
        score = a * b * c * d * e * f
        if score > 0.0 and score >= floor:
            ranked.append(RankedHit(hit, score, factors))
            scores.add(score)
    # (-score, id), stably. With no two scores equal (the usual case) the score alone orders
    # them: a sort on float keys, which CPython compares without a tuple per hit; a tie (no NaN
    # or -0.0 gets here: every score kept is > 0) takes the (-score, id) key
    if len(scores) == len(ranked):
        ranked.sort(key=_score_of, reverse=True)
    else:
        ranked.sort(key=_score_then_id)
    return ranked


_score_of = attrgetter("score")


def _score_then_id(r: RankedHit) -> tuple[float, str]:
    return (-r.score, r.hit.memory.id)


def lead_first(ranked: list[RankedHit], purpose: Purpose, config: RankingConfig | None = None) -> list[RankedHit]:
    """The purpose ordering: relevant hits of the purpose's lead class first, each level in the
    order it came in (the product's). Marks the promoted hits (`RankedHit.lead`)."""
    config = config or _DEFAULT
    lead = config.leads.get(purpose)
    if lead is None or not ranked or not ranked[0].factors:
        return ranked
    kinds, visibilities = lead.kinds, lead.visibilities
    # a recall may hold no hit of the lead class (a quarter of the benchmark's): one pass over
    # the kinds, and the band is computed only when there is a candidate to promote
    first = [r for r in ranked if r.hit.memory.kind in kinds]
    if not first:
        return ranked
    gate = max([r.factors[0] for r in ranked]) * config.lead_band
    first = [r for r in first if r.factors[0] >= gate and r.hit.scope.visibility.value in visibilities]
    if not first:
        return ranked
    for r in first:
        r.lead = True
    return first + [r for r in ranked if not r.lead]


_DEFAULT = RankingConfig()


def similarity_floor(rt: RecallRuntime, ctx: RecallContext) -> float:
    """The similarity floor of this recall: none when the recall states its own `min_score`,
    else the configured one, else the calibrated floor of the store's embedder."""
    if ctx.op.min_score is not None:
        return 0.0
    if rt.ranking.min_similarity is not None:
        return rt.ranking.min_similarity
    return recall_floor(getattr(rt.backend, "embedder", None))  # remote backends have none: 0.0


def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    assert ctx.scopes is not None, "the scopes stage runs before ranking"
    ranked = rank_hits(ctx.hits, ctx.scopes, ctx.op.purpose, rt.ranking, now=rt.clock(), min_score=ctx.op.min_score,
                       min_similarity=similarity_floor(rt, ctx))
    ranked = time_aware(ranked, ctx.op.query)  # a question about WHEN: no freshness, dated memories lifted (time_aware.py)
    ctx.ranked = lead_first(ranked, ctx.op.purpose, rt.ranking)
