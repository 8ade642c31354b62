"""The one object a recall's stages pass along; each stage fills the fields it owns."""

from __future__ import annotations

from dataclasses import dataclass, field

from adapters.base import Hit, SearchQuery, SearchResult
from adapters.scopes import ScopeSet
from bridge.results import RecalledMemory, RecallResult
from bridge.operations import Recall
from bridge.recall.budget import BudgetConfig, BudgetedItem
from bridge.recall.guard import GuardAlarm
from bridge.recall.rank import RankedHit
from identity.model import MemoryIdentity

__all__ = ["RecallContext"]


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
    items: list[RecalledMemory] = field(default_factory=list)  # stage "label"
    context: str = ""  # stage "render"
    audit_seq: int | None = None  # stage "audit"

    def to_result(self) -> RecallResult:
        assert self.scopes is not None
        searched = tuple(str(k) for k in self.scopes.keys)
        # model_construct: every field is built by the stages from validated records (hot path)
        return RecallResult.model_construct(
            identity=self.identity.principal,
            purpose=self.op.purpose.value,
            query=self.op.query,
            items=tuple(self.items),
            context=self.context,
            tokens_used=self.tokens_used,
            scopes_searched=searched,
            partial=bool(self.failed),
            failed_scopes=self.failed,
            guard_alarms=len(self.alarms),
            expired_dropped=self.expired_dropped,
            audit_seq=self.audit_seq,
        )
