"""QueryAudit: reading the audit log."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.errors import InvalidInput
from bridge.operations.base import Operation, _set
from bridge.operations.limits import Limits
from bridge.state.records import AUDIT_ACTIONS
from bridge.operations.fields import (
    optional_ident,
    positive_int, shown,
)



@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAudit(Operation):
    """Audit rows the policy lets this identity read, newest first."""

    action: str | None = None  # only rows of this audit action
    memory_id: str | None = None
    limit: int = 100
    since_seq: int = 0  # only rows after this one (a lower bound, exclusive)
    before_seq: int | None = None  # only rows before this one: the cursor that pages back past the newest rows
    actor: str | None = None  # only rows of this actor (its principal, `tenant/user@agent`, as the rows show it)

    def __post_init__(self) -> None:
        if self.action is not None and (not isinstance(self.action, str) or self.action not in AUDIT_ACTIONS):
            raise InvalidInput(f"unknown audit action {shown(self.action)}; expected one of: {', '.join(sorted(AUDIT_ACTIONS))}")
        _set(self, "memory_id", optional_ident(self.memory_id, "memory_id"))
        _set(self, "limit", positive_int(self.limit, "limit", 1_000_000))
        if isinstance(self.since_seq, bool) or not isinstance(self.since_seq, int) or self.since_seq < 0:
            raise InvalidInput(f"since_seq must be a non-negative integer, got {shown(self.since_seq)}")
        if self.before_seq is not None and (isinstance(self.before_seq, bool) or not isinstance(self.before_seq, int) or self.before_seq < 1):
            raise InvalidInput(f"before_seq must be a positive integer, got {shown(self.before_seq)}")
        if self.actor is not None and (not isinstance(self.actor, str) or not 0 < len(self.actor) <= 400 or not self.actor.isprintable()):
            raise InvalidInput(f"actor must be a principal such as 'acme/alice@assistant', got {shown(self.actor)}")

    def check(self, limits: Limits) -> None:
        if self.limit > limits.max_audit_rows:
            raise InvalidInput(f"limit is {self.limit}; at most {limits.max_audit_rows} rows per query")
