"""The admin console's operations: tenant-wide views a tenant admin needs.

Grants in force across the tenant, live injection manifests, per-scope memory counts, "who
can read this memory and why", browsing one scope's memories (optionally by text), and the
tenant's directory (users, agents, teams, as the bridge knows them). Same rules as `bridge/operations/__init__.py`: frozen dataclasses
validated when built, and no field names the caller or a tenant — the tenant is always the
caller's own, from the credential. Permissions are `bridge/policy/reads.py`'s, handlers
`bridge/handlers/admin.py`. Only `BrowseMemories` returns memory content (it is audited as an
`inspect` row naming the ids shown).
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.operations.base import Operation
from bridge.operations.lifecycle import _RefOperation
from bridge.operations.sharing import _set
from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.operations.limits import Limits
from bridge.operations.fields import flag, positive_int, scope_key, text, within

__all__ = ["TenantGrants", "TenantManifests", "ScopeCounts", "WhoCanRead", "BrowseMemories", "TenantDirectory"]

_BROWSABLE = ("active", "pending", "superseded")


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantGrants(Operation):
    """Every grant of the caller's tenant (tenant admin), newest first; in force only unless
    `include_inactive`."""

    include_inactive: bool = False
    limit: int = 500

    def __post_init__(self) -> None:
        _set(self, "include_inactive", flag(self.include_inactive, "include_inactive"))
        _set(self, "limit", positive_int(self.limit, "limit", 1000))


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantManifests(Operation):
    """Live injection manifests of the caller's tenant (tenant admin), newest first."""

    limit: int = 500

    def __post_init__(self) -> None:
        _set(self, "limit", positive_int(self.limit, "limit", 1000))


@dataclass(frozen=True, slots=True, kw_only=True)
class ScopeCounts(Operation):
    """How many memories each scope of the caller's tenant holds, by status (tenant admin)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WhoCanRead(_RefOperation):
    """Who can read one memory of the caller's tenant, and by which rule (tenant admin)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowseMemories(Operation):
    """One page of one scope of the caller's tenant (tenant admin), of one status or all, and
    only memories whose content contains `text` (case-insensitive) when given. A page scans at
    most a bounded number of memories, so a text search may return a short page with a cursor:
    pass `next_cursor` back to scan on."""

    scope: ScopeKey
    text: str | None = None
    status: str | None = None  # None: every status
    cursor: str | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        _set(self, "scope", scope_key(self.scope))
        if self.text is not None:
            _set(self, "text", text(self.text, "text"))
        if self.status is not None and (not isinstance(self.status, str) or self.status not in _BROWSABLE):
            raise InvalidInput(f"status must be one of: {', '.join(_BROWSABLE)} (or none for every status)")
        if self.cursor is not None:
            _set(self, "cursor", text(self.cursor, "cursor"))
        _set(self, "limit", positive_int(self.limit, "limit", 200))

    def check(self, limits: Limits) -> None:
        if self.cursor is not None:
            within(self.cursor, "cursor", 512)
        if self.text is not None:
            within(self.text, "text", 400)


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantDirectory(Operation):
    """The users, agents and teams of the caller's tenant (tenant admin), from what the bridge
    knows: the tenant's API keys, team membership and the actors of recent audit rows."""
