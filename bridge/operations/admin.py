"""The admin console's operations: tenant-wide views a tenant admin needs.

Grants in force across the tenant, live injection manifests, per-scope memory counts, and "who
can read this memory and why". Same rules as `bridge/operations/__init__.py`: frozen dataclasses
validated when built, and no field names the caller or a tenant — the tenant is always the
caller's own, from the credential. Permissions are `bridge/policy/reads.py`'s, handlers
`bridge/handlers/admin.py`. None of them returns memory content.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.operations.base import Operation
from bridge.operations.lifecycle import _RefOperation
from bridge.operations.sharing import _set
from bridge.operations.fields import flag, positive_int

__all__ = ["TenantGrants", "TenantManifests", "ScopeCounts", "WhoCanRead"]


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
