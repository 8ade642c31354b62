"""Ranking: semantic x scope_weight x confidence x freshness x status x kind-for-purpose.

Permission is NOT a score here: every hit reaching this module is already authorised. A scope
weight orders *permitted* memories (your own before the workspace's before the tenant's).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from adapters.base import Hit, Status
from adapters.scopes import ScopeSet
from bridge.policy import Policy
from bridge.vocabulary import Purpose

_STATUS_WEIGHT = {Status.ACTIVE: 1.0, Status.PENDING: 0.5, Status.SUPERSEDED: 0.3, Status.FORGOTTEN: 0.0}


@dataclass(frozen=True)
class FreshnessConfig:
    """Exponential decay with a grace period; profiles and standards age slowly."""

    half_life_days: float = 90.0
    grace_days: float = 7.0
    slow_kinds: frozenset[str] = frozenset({"profile", "preference", "standard", "decision"})
    slow_factor: float = 4.0
    floor: float = 0.3


FACTOR_NAMES = ("semantic", "scope", "confidence", "freshness", "status", "kind")


@dataclass(frozen=True, slots=True)
class RankedHit:
    hit: Hit
    score: float
    factors: tuple[float, ...] = ()  # in FACTOR_NAMES order, for explaining a rank

    def explain(self) -> dict[str, float]:
        return dict(zip(FACTOR_NAMES, self.factors))


def freshness(created_at: float, kind: str, now: float, config: FreshnessConfig) -> float:
    age_days = max(0.0, (now - created_at) / 86400.0 - config.grace_days)
    half_life = config.half_life_days * (config.slow_factor if kind in config.slow_kinds else 1.0)
    return max(config.floor, math.pow(0.5, age_days / half_life))


def rank_hits(
    hits: list[Hit],
    scopes: ScopeSet,
    purpose: Purpose,
    policy: Policy,
    *,
    now: float | None = None,
    freshness_config: FreshnessConfig | None = None,
) -> list[RankedHit]:
    now = time.time() if now is None else now
    fconf = freshness_config or FreshnessConfig()
    ranked = []
    for hit in hits:
        m = hit.memory
        factors = (
            max(0.0, hit.score),
            scopes.entry(hit.scope).weight,
            m.confidence,
            freshness(m.created_at, m.kind, now, fconf),
            _STATUS_WEIGHT[m.status],
            policy.kind_weight(purpose, m.kind),
        )
        ranked.append(RankedHit(hit, math.prod(factors), factors))
    ranked.sort(key=lambda r: (-r.score, r.hit.memory.id))
    return ranked
