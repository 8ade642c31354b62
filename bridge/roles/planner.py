"""Which memories go into a child's manifest: per-domain tier budgets over permitted candidates.

Pure: it gets candidates the parent may already read (searched and listed through the parent's
own scopes by bridge/handlers/roles.py) and only chooses among them — it can drop, never add. For each
domain of the route (primary: budget x multiplier; auxiliary: x multiplier x auxiliary share,
rounded down), it fills each tier the role reads with that tier's best candidates, then the
reserve slots with the best leftovers of any of the role's tiers. "Best" is task relevance
(the semantic score of the task search; a listed, unsearched memory scores 0), then the hotter
tier, then the newer memory, then the id — so equal inputs give equal manifests.

A candidate is eligible only if its domain is routed, its tier is one the role reads, its kind
is allowed and its scope's layer is one of the role's read layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from adapters.base import StoredMemory
from adapters.scopes import ScopeKey
from bridge.roles.model import DEFAULT_TIER, DOMAIN_KEY, TIER_KEY, TIERS, AgentRole, Budgets
from bridge.roles.router import Route

__all__ = ["Candidate", "ManifestPlan", "plan_manifest", "slots_for", "domain_of", "tier_of"]

_TIER_ORDER = {t: n for n, t in enumerate(TIERS)}


@dataclass(frozen=True)
class Candidate:
    scope: ScopeKey
    memory: StoredMemory
    relevance: float = 0.0  # the task search's semantic score; 0 for a listed memory


@dataclass(frozen=True)
class ManifestPlan:
    """The chosen refs, and per domain the slots it had and what each tier received."""

    refs: tuple[tuple[ScopeKey, str], ...]
    slots: dict[str, dict[str, int]] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.refs)


def domain_of(memory: StoredMemory) -> str | None:
    value = memory.metadata.get(DOMAIN_KEY)
    return value if isinstance(value, str) and value else None


def tier_of(memory: StoredMemory) -> str | None:
    """The memory's tier; `warm` when it names none; None (never eligible) for an unknown one."""
    value = memory.metadata.get(TIER_KEY, DEFAULT_TIER)
    return value if value in _TIER_ORDER else None


def slots_for(budgets: Budgets, role: AgentRole, *, auxiliary: bool) -> dict[str, int]:
    factor = role.budget_multiplier * (budgets.auxiliary_share if auxiliary else 1.0)
    # a tiny epsilon so 5 x 0.6 is 3 slots, not 2 (binary floating point gives 2.9999999999999996)
    slots = {t: math.floor(getattr(budgets, t) * factor + 1e-9) for t in role.tiers}
    slots["reserve"] = math.floor(budgets.reserve * factor + 1e-9)
    return slots


def _eligible(c: Candidate, role: AgentRole, domains: set[str]) -> bool:
    m = c.memory
    return (
        domain_of(m) in domains
        and tier_of(m) in role.tiers
        and c.scope.visibility.value in role.read_layers
        and (role.allowed_kinds is None or m.kind in {k.value for k in role.allowed_kinds})
    )


def _best_first(c: Candidate) -> tuple[float, int, float, str]:
    return (-c.relevance, _TIER_ORDER[tier_of(c.memory) or DEFAULT_TIER], -c.memory.created_at, c.memory.id)


def plan_manifest(role: AgentRole, route: Route, candidates: list[Candidate], budgets: Budgets) -> ManifestPlan:
    best: dict[tuple[ScopeKey, str], Candidate] = {}
    for c in candidates:  # one memory may arrive by search and by listing: keep its best relevance
        key = (c.scope, c.memory.id)
        if key not in best or c.relevance > best[key].relevance:
            best[key] = c
    pool = sorted((c for c in best.values() if _eligible(c, role, set(route.domains))), key=_best_first)
    refs: list[tuple[ScopeKey, str]] = []
    all_slots: dict[str, dict[str, int]] = {}
    counts: dict[str, dict[str, int]] = {}
    for domain in route.domains:
        slots = all_slots[domain] = slots_for(budgets, role, auxiliary=domain != route.primary)
        mine = [c for c in pool if domain_of(c.memory) == domain]
        taken: list[Candidate] = []
        got = counts[domain] = {t: 0 for t in role.tiers}
        for tier in role.tiers:
            chosen = [c for c in mine if tier_of(c.memory) == tier][: slots[tier]]
            taken += chosen
            got[tier] += len(chosen)
        leftovers = [c for c in mine if c not in taken][: slots["reserve"]]
        for c in leftovers:
            got[tier_of(c.memory) or DEFAULT_TIER] += 1
        taken += leftovers
        refs += [(c.scope, c.memory.id) for c in sorted(taken, key=_best_first)]
    return ManifestPlan(tuple(refs), all_slots, counts)
