"""What a recall's stages share: the one object they pass along (`RecallContext`, each stage fills
the fields it owns), the records that flow between them (`RankedHit`, `BudgetedItem`,
`PlaceVisibility`, `GuardAlarm`), and `RecallRuntime` — the part of the bridge's runtime a stage
may read. Stages depend on this module and on `config.py`, never on each other's internals or on the runtime class,
so no stage can reach a part of the bridge a recall has no business with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from adapters.base import Hit, MemoryBackend, SearchQuery, SearchResult
from adapters.scopes import ScopeKey, ScopeSet
from bridge.results import RecalledMemory, RecallResult
from bridge.operations import Recall
from bridge.operations.limits import Limits
from bridge.policy import Policy
from bridge.policy.sharing import EVERY_AGENT, visible_to_of
from bridge.recall.config import BudgetConfig, RankingConfig, TokenCounter
from bridge.state.protocols import BridgeState
from identity.model import MemoryIdentity

__all__ = ["RecallContext", "RecallRuntime", "RankedHit", "BudgetedItem", "PlaceVisibility", "GuardAlarm", "FACTOR_NAMES"]


class RecallRuntime(Protocol):
    """What a recall stage reads from the bridge's runtime (`bridge.runtime.BridgeRuntime` is one)."""

    backend: MemoryBackend
    state: BridgeState
    policy: Policy
    ranking: RankingConfig
    budget: BudgetConfig
    limits: Limits
    token_counter: TokenCounter | None
    clock: Callable[[], float]


@dataclass(slots=True)
class RecallContext:
    identity: MemoryIdentity
    op: Recall
    budget: BudgetConfig
    scopes: ScopeSet | None = None  # stage "scopes"
    query: SearchQuery | None = None  # stage "search"
    result: SearchResult | None = None  # stage "search"
    failed: tuple[str, ...] = ()  # stage "search" (allow_partial only)
    hits: list[Hit] = field(default_factory=list)  # stage "guard"
    alarms: list[GuardAlarm] = field(default_factory=list)  # stage "guard"
    expired_dropped: int = 0  # stage "guard": expired hits of a backend without expiry_in_query
    ranked: list[RankedHit] = field(default_factory=list)  # stage "rank"
    chosen: list[BudgetedItem] = field(default_factory=list)  # stage "budget"
    tokens_used: int = 0  # stage "budget"
    visibility: dict[ScopeKey, PlaceVisibility] = field(default_factory=dict)  # stage "visibility"
    items: list[RecalledMemory] = field(default_factory=list)  # stage "label"
    context: str = ""  # stage "render"
    audit_seq: int | None = None  # stage "audit" (None: the row is queued for its group commit)
    _searched: tuple[ScopeSet, tuple[str, ...]] | None = field(default=None, init=False, repr=False, compare=False)  # `searched()`

    def searched(self) -> tuple[str, ...]:
        """Every scope of the ScopeSet as text, in its order: built once, for the audit row and
        the result that both carry it."""
        assert self.scopes is not None
        if self._searched is None or self._searched[0] is not self.scopes:
            self._searched = (self.scopes, tuple([str(e.key) for e in self.scopes]))
        return self._searched[1]

    def to_result(self) -> RecallResult:
        # every field is built by the stages from validated records: no validation (hot path)
        return RecallResult.of_stages(
            self.identity.principal, self.op.purpose.value, self.op.query, tuple(self.items), self.context, self.tokens_used,
            self.searched(), bool(self.failed), self.failed, len(self.alarms), self.expired_dropped, self.audit_seq,
        )


FACTOR_NAMES = ("semantic", "scope", "confidence", "freshness", "status", "kind")


@dataclass(slots=True)
class RankedHit:
    """One scored hit. Not frozen (a frozen init costs a setattr per field, for every candidate
    of every recall); nothing mutates it after ranking."""

    hit: Hit
    score: float
    factors: tuple[float, ...] = ()  # in FACTOR_NAMES order, for explaining a rank
    lead: bool = False  # promoted by its purpose's lead class (`lead_first`)

    def explain(self) -> dict[str, float]:
        explained = dict(zip(FACTOR_NAMES, self.factors))
        if self.lead:
            explained["lead"] = 1.0
        return explained


@dataclass(slots=True)
class BudgetedItem:
    ranked: RankedHit
    tokens: int
    duplicates: list[RankedHit] = field(default_factory=list)
    conflicts_with: list[RankedHit] = field(default_factory=list)


@dataclass(slots=True)
class PlaceVisibility:
    """One place's decision for the items read from it: their memory type, and for a place
    whose memories carry a stored audience (an agent's places, a narrowed team) each memory's
    audience; None for every other place, whose items are visible to `("*",)`."""

    key: ScopeKey
    memory_type: str
    audiences: dict[str, frozenset[str]] | None

    def visible_to(self, memory_id: str) -> tuple[str, ...]:
        if self.audiences is None:
            return _EVERY
        return visible_to_of(self.key, self.audiences.get(memory_id, frozenset()))


_EVERY = (EVERY_AGENT,)  # the whole audience of the place


@dataclass(frozen=True)
class GuardAlarm:
    memory_id: str
    claimed_scope: str
    stored_scope: str
    reason: str
