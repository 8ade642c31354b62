"""PurgeExpired: expired memories deleted for good, each audited."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.operations.base import Operation, _set
from bridge.operations.fields import (
    positive_int,
)



@dataclass(frozen=True, slots=True, kw_only=True)
class PurgeExpired(Operation):
    """Delete the caller's tenant's expired memories (tenant admins), at most `max_deletions`
    per call: each with a write intent and an audit row `expired`. `PurgeReport.complete` says
    whether the tenant is clean; a long purge is a loop of calls, each reporting its progress."""

    max_deletions: int = 1000

    def __post_init__(self) -> None:
        _set(self, "max_deletions", positive_int(self.max_deletions, "max_deletions", 100_000))
