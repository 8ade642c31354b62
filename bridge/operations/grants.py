"""IssueGrant and RevokeGrant: explicit, audited read access beyond the defaults."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.scopes import ScopeKey
from bridge.operations.base import Operation, _set
from bridge.operations.limits import Limits
from bridge.operations.fields import (
    ident, number, optional_ident,
    scope_key, text, within,
)



@dataclass(frozen=True, slots=True, kw_only=True)
class IssueGrant(Operation):
    """Let one user (optionally one agent) read one scope of the tenant until it expires."""

    grantee_user_id: str
    scope: ScopeKey
    ttl_seconds: float
    reason: str
    grantee_agent_id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "grantee_user_id", ident(self.grantee_user_id, "grantee_user_id"))
        _set(self, "scope", scope_key(self.scope))
        _set(self, "ttl_seconds", number(self.ttl_seconds, "ttl_seconds", 0.0, float(2**31)))
        _set(self, "reason", text(self.reason, "reason"))
        _set(self, "grantee_agent_id", optional_ident(self.grantee_agent_id, "grantee_agent_id"))

    def check(self, limits: Limits) -> None:
        within(self.reason, "reason", limits.max_metadata_value_chars)


@dataclass(frozen=True, slots=True, kw_only=True)
class RevokeGrant(Operation):
    grant_id: str

    def __post_init__(self) -> None:
        _set(self, "grant_id", ident(self.grant_id, "grant_id"))
