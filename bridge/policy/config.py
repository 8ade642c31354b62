"""The policy's vocabulary and configuration: the roles a credential may carry, the scope
weights per purpose, where each kind is written by default, how far a promotion reaches, and the
decisions the policy hands back (`WriteDecision`, `PromotionDecision`). Data only; the rules that
use it are `Policy` in `bridge/policy/__init__.py` and its siblings."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from bridge.vocabulary import Kind, Purpose

__all__ = [
    "Role", "ROLE_ADMIN", "ROLE_APPROVER", "ROLE_GLOBAL_ADMIN", "MAX_GRANT_TTL_SECONDS", "DEFAULT_VISIBILITY", "PROMOTION_REACH", "PolicyConfig", "WriteDecision",
    "PromotionDecision",
]


class Role(str, enum.Enum):
    """The roles the policy knows; an identity's roles come from its credential only."""

    ADMIN = "admin"  # tenant admin: visibility changes, tenant-wide writes, grants, audit
    APPROVER = "approver"  # approves pending department/workspace memories
    GLOBAL_ADMIN = "global_admin"  # may write the global scope — only in a global-writer tenant


ROLE_ADMIN, ROLE_APPROVER, ROLE_GLOBAL_ADMIN = Role.ADMIN.value, Role.APPROVER.value, Role.GLOBAL_ADMIN.value

# Seed 003 default weights, and the purpose orderings it describes.
_CHAT_WEIGHTS = {
    Visibility.PRIVATE: 1.00, Visibility.AGENT: 0.97, Visibility.WORKSPACE: 0.95,
    Visibility.DEPARTMENT: 0.85, Visibility.TENANT: 0.70, Visibility.GLOBAL: 0.50,
    Visibility.TASK: 0.98, Visibility.TEAM: 0.95,  # seed 000's task working memory and team memory
}
_CODING_WEIGHTS = {
    Visibility.WORKSPACE: 1.00, Visibility.AGENT: 0.95, Visibility.DEPARTMENT: 0.90,
    Visibility.PRIVATE: 0.85, Visibility.TENANT: 0.65, Visibility.GLOBAL: 0.50,
    Visibility.TASK: 0.98, Visibility.TEAM: 0.98,
}
DEFAULT_VISIBILITY = {
    Kind.PROFILE: Visibility.PRIVATE, Kind.PREFERENCE: Visibility.PRIVATE, Kind.EVENT: Visibility.PRIVATE,
    Kind.NOTE: Visibility.PRIVATE, Kind.FACT: Visibility.WORKSPACE, Kind.DECISION: Visibility.WORKSPACE,
    Kind.PROCEDURE: Visibility.AGENT, Kind.EXPERIENCE: Visibility.AGENT, Kind.STANDARD: Visibility.DEPARTMENT,
}
# How far a visibility reaches, for "promotion only widens".
PROMOTION_REACH = {
    Visibility.PRIVATE: 0, Visibility.AGENT: 0, Visibility.TASK: 0, Visibility.WORKSPACE: 1, Visibility.TEAM: 1,
    Visibility.DEPARTMENT: 2, Visibility.TENANT: 3, Visibility.GLOBAL: 4,
}
MAX_GRANT_TTL_SECONDS = 366 * 86400


@dataclass(frozen=True)
class PolicyConfig:
    """Tunable numbers. Weights are in [0, 1]; grants always weigh at most `grant_weight`."""

    scope_weights: dict[Purpose, dict[Visibility, float]] = field(
        default_factory=lambda: {Purpose.CHAT: dict(_CHAT_WEIGHTS), Purpose.CODING: dict(_CODING_WEIGHTS)}
    )
    grant_weight: float = 0.6  # cross-scope results rank below the caller's own scopes
    injected_weight: float = 0.9
    include_global: bool = True
    # Tenants whose `global_admin`s may write the global scope every tenant reads. Empty by
    # default: a role is asserted by the tenant's own IdP, so without this list any tenant's
    # admin could inject text into every other tenant's context.
    global_writer_tenants: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WriteDecision:
    scope: ScopeKey
    status: Status
    reason: str


@dataclass(frozen=True)
class PromotionDecision:
    """Where a promoted copy lands, whether it is live at once, and whether the source may be
    superseded by this caller (only where the caller may also forget it)."""

    target: ScopeKey
    status: Status
    supersede_source: bool
    reason: str
