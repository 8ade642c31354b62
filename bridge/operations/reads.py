"""The read API's operations: get by reference, list a scope with cursors, the
approval queue, in-place edit, reject, list grants, seed 000's inject-context.

Same rules as `bridge/operations/__init__.py`: frozen dataclasses validated when built, no field naming
the caller; permissions are `bridge/policy/reads.py`'s, handlers `bridge/handlers/reads.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Any, Mapping

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.operations.limits import Limits
from bridge.operations.base import Operation
from bridge.operations.injection import Inject
from bridge.operations.lifecycle import _RefOperation
from bridge.operations.sharing import _set
from bridge.operations.fields import check_metadata, flag, ident, memory_ref, metadata, number, optional_ident, positive_int, scope_key, text, within

__all__ = ["GetMemory", "FindMemory", "MemoryHistory", "FindByKey", "ListMemories", "PendingApprovals", "EditMemory", "Reject", "ListGrants", "InjectContext"]

_LISTABLE = {"active": "active", "pending": "pending", "superseded": "superseded"}


@dataclass(frozen=True, slots=True, kw_only=True)
class GetMemory(_RefOperation):
    """One memory by reference, if the identity may read it (its default scopes or a grant)."""



@dataclass(frozen=True, slots=True, kw_only=True)
class FindMemory(Operation):
    """One memory by id alone, looked up only in the scopes the caller reads by default (its
    own scopes and its teams): never a wider view, and absent (`NotFound`) alike whether it does
    not exist or lives where the caller may not read it."""

    memory_id: str

    def __post_init__(self) -> None:
        _set(self, "memory_id", ident(self.memory_id, "memory_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryHistory(Operation):
    """Who changed one memory, what and when (its audit rows, newest first, reads left out),
    for a caller who may read the memory; `scope` None: found as `FindMemory` finds it."""

    memory_id: str
    scope: ScopeKey | None = None
    limit: int = 100

    def __post_init__(self) -> None:
        _set(self, "memory_id", ident(self.memory_id, "memory_id"))
        if self.scope is not None:
            _set(self, "scope", scope_key(self.scope))
        _set(self, "limit", positive_int(self.limit, "limit", 500))


@dataclass(frozen=True, slots=True, kw_only=True)
class FindByKey(Operation):
    """The memory the caller itself stored in `scope` with idempotency key `key`, if it may read it.

    O(1) in the scope's size (one backend lookup, no listing). The key is the caller's own, as it
    passed it to a write: the bridge namespaces it by the writer (`bridge.writes.backend_key`), so
    a lookup finds only what this identity (tenant, user, agent) wrote — never another writer's
    memory with the same key in a shared scope.
    """

    scope: ScopeKey
    key: str

    def __post_init__(self) -> None:
        _set(self, "scope", scope_key(self.scope))
        _set(self, "key", ident(self.key, "key"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ListMemories(Operation):
    """One page of a readable scope's memories; pass `next_cursor` back for the next page.
    `scope` None: every scope the caller reads by default ("all my memories"), one after another."""

    scope: ScopeKey | None = None
    cursor: str | None = None
    limit: int = 50
    status: str = "active"

    def __post_init__(self) -> None:
        if self.scope is not None:
            _set(self, "scope", scope_key(self.scope))
        if self.cursor is not None:
            _set(self, "cursor", text(self.cursor, "cursor"))
        _set(self, "limit", positive_int(self.limit, "limit", 500))
        if not isinstance(self.status, str) or self.status not in _LISTABLE:
            raise InvalidInput(f"status must be one of: {', '.join(_LISTABLE)}")

    def check(self, limits: Limits) -> None:
        if self.cursor is not None:
            within(self.cursor, "cursor", 512)


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApprovals(Operation):
    """Pending memories in the scopes this identity may approve, one page at a time."""

    cursor: str | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        if self.cursor is not None:
            _set(self, "cursor", text(self.cursor, "cursor"))
        _set(self, "limit", positive_int(self.limit, "limit", 500))

    def check(self, limits: Limits) -> None:
        if self.cursor is not None:
            within(self.cursor, "cursor", 1024)


@dataclass(frozen=True, slots=True, kw_only=True)
class EditMemory(Operation):
    """Correct a memory in place: same id, new content (re-embedded) and/or metadata; audited."""

    changes_ref: ClassVar[bool] = True

    ref: tuple[ScopeKey, str]
    content: str | None = None
    metadata: Mapping[str, Any] | None = None
    confidence: float | None = None

    def __post_init__(self) -> None:
        _set(self, "ref", memory_ref(self.ref))
        if self.content is None and self.metadata is None and self.confidence is None:
            raise InvalidInput("edit needs content, metadata or confidence")
        if self.content is not None:
            _set(self, "content", text(self.content, "content"))
        if self.metadata is not None:
            _set(self, "metadata", metadata(self.metadata))
        if self.confidence is not None:
            _set(self, "confidence", number(self.confidence, "confidence", 0.0, 1.0))

    def check(self, limits: Limits) -> None:
        if self.content is not None:
            within(self.content, "content", limits.max_content_chars)
        if self.metadata is not None:
            check_metadata(self.metadata, limits)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reject(_RefOperation):
    """An approver turns down a pending memory: it is deleted, and the refusal audited."""

    changes_ref: ClassVar[bool] = True



@dataclass(frozen=True, slots=True, kw_only=True)
class ListGrants(Operation):
    """Grants held by the caller, or (tenant admin) by `grantee_user_id` of the tenant."""

    grantee_user_id: str | None = None
    include_inactive: bool = False

    def __post_init__(self) -> None:
        _set(self, "grantee_user_id", optional_ident(self.grantee_user_id, "grantee_user_id"))
        _set(self, "include_inactive", flag(self.include_inactive, "include_inactive"))


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectContext(Operation):
    """Seed 000's inject-context: an `Inject` whose result also carries the injected memories
    and their rendered context, for the parent to hand to the child's prompt."""

    inject: Inject

    def __post_init__(self) -> None:
        if not isinstance(self.inject, Inject):
            raise InvalidInput("inject-context wraps an Inject operation")

    def check(self, limits: Limits) -> None:
        self.inject.check(limits)
