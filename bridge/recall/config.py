"""The recall pipeline's knobs: how ranking weighs kinds, freshness and leads per purpose, and how
the budget stage fills a token budget. Configuration only, read by the stages and built by the
settings (`bridge/assembly/settings.py`); the stages themselves live beside this module."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from bridge.errors import ConfigurationError
from bridge.vocabulary import Kind, Purpose

__all__ = ["RankingConfig", "FreshnessConfig", "LeadClass", "BudgetConfig", "TokenCounter"]


@dataclass(frozen=True)
class FreshnessConfig:
    """Exponential decay with a grace period; profiles and standards age slowly.

    The floor bounds what age can cost: 0.8, so freshness orders memories of about the same
    relevance (the newer of two versions of a fact first) but never buries an old, relevant one
    under a newer, weaker match. At 0.3 it did: on benchmarks/recall_locomo.py (tuning seed 1)
    the pipeline found 0.71 at hit@5 against 0.77 for the backend's own ranking; at 0.8, 0.80."""

    half_life_days: float = 90.0
    grace_days: float = 7.0
    slow_kinds: frozenset[str] = frozenset({"profile", "preference", "standard", "decision"})
    slow_factor: float = 4.0
    floor: float = 0.8

    def __post_init__(self) -> None:
        # a half-life that is not a positive number makes the decay undefined: refused here, once,
        # so the ranking never meets it per hit
        for name in ("half_life_days", "slow_factor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < math.inf:
                raise ConfigurationError(f"freshness {name} must be a positive number, got {value!r}")


_CHAT_KINDS = {Kind.PROFILE: 1.0, Kind.PREFERENCE: 1.0, Kind.EVENT: 0.95}


_CODING_KINDS = {Kind.DECISION: 1.0, Kind.FACT: 1.0, Kind.PROCEDURE: 0.97, Kind.EXPERIENCE: 0.95, Kind.STANDARD: 0.93, Kind.PREFERENCE: 0.9}


@dataclass(frozen=True)
class LeadClass:
    """The memories a purpose puts first: these kinds in these visibilities (seed 003)."""

    kinds: frozenset[str]
    visibilities: frozenset[str]

    def holds(self, kind: str, visibility: str) -> bool:
        return kind in self.kinds and visibility in self.visibilities


_LEADS = {
    # chat: "user profile/preferences > current user events > workspace > department > tenant > global"
    Purpose.CHAT: LeadClass(frozenset({"profile", "preference"}), frozenset({"private"})),
    # coding: "current project facts/decisions > workspace commands and debugging experience > ..."
    Purpose.CODING: LeadClass(frozenset({"fact", "decision"}), frozenset({"workspace"})),
}


@dataclass(frozen=True)
class RankingConfig:
    """What ranking weighs besides the scope weight: kind per purpose, freshness, the floor."""

    kind_weights: dict[Purpose, dict[Kind, float]] = field(
        default_factory=lambda: {Purpose.CHAT: dict(_CHAT_KINDS), Purpose.CODING: dict(_CODING_KINDS)}
    )
    other_kind_weight: float = 0.9
    freshness: FreshnessConfig = field(default_factory=FreshnessConfig)
    min_score: float = 0.0
    #: the similarity (the backend's score, before any weight) below which a hit is not relevant:
    #: None = the store's embedder's calibrated `recall_floor` (adapters/shared/embedding.py)
    min_similarity: float | None = None
    #: the class each purpose puts first (None: plain product order for that purpose)
    leads: dict[Purpose, LeadClass | None] = field(default_factory=lambda: dict(_LEADS))
    #: a lead-class hit leads only if its semantic score is >= lead_band x the best one
    lead_band: float = 0.25

    def __post_init__(self) -> None:
        # keyed by the kind's string value: no enum construction per hit on the recall path
        object.__setattr__(self, "_by_value", {p: {k.value: w for k, w in ws.items()} for p, ws in self.kind_weights.items()})

    def kind_weight(self, purpose: Purpose, kind: str) -> float:
        return self._by_value[purpose].get(kind, self.other_kind_weight)  # type: ignore[attr-defined]


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class BudgetConfig:
    max_tokens: int = 1200
    per_item_overhead: int = 24  # the provenance label each rendered item carries
    kind_quotas: dict[str, int] = field(default_factory=dict)  # kind -> max items
    max_items: int = 50
