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


#: the largest audit seq a query may name: every store keeps seqs in a 64-bit integer, and a
#: larger bound is a caller's mistake to refuse as such, not a database overflow
MAX_SEQ = 2**62


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
        if isinstance(self.since_seq, bool) or not isinstance(self.since_seq, int) or not 0 <= self.since_seq <= MAX_SEQ:
            raise InvalidInput(f"since_seq must be an integer within [0, {MAX_SEQ}], got {shown(self.since_seq)}")
        if self.before_seq is not None:
            _set(self, "before_seq", positive_int(self.before_seq, "before_seq", MAX_SEQ))
        if self.actor is not None and (not isinstance(self.actor, str) or not 0 < len(self.actor) <= 400 or not self.actor.isprintable()):
            raise InvalidInput(f"actor must be a principal such as 'acme/alice@assistant', got {shown(self.actor)}")

    def check(self, limits: Limits) -> None:
        if self.limit > limits.max_audit_rows:
            raise InvalidInput(f"limit is {self.limit}; at most {limits.max_audit_rows} rows per query")
