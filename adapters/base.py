"""The backend protocol every adapter implements, and the records that cross it.

An adapter stores and searches memories *where it is told*. It never decides who may see what:
the bridge's policy builds a non-empty `ScopeSet`, the adapter pushes exactly that set into the
backend query and tags every hit with the `ScopeKey` it was read from. Rules every adapter keeps
(the contract suite in `contract_tests/` checks them):

- every call names a ScopeKey or a non-empty ScopeSet; an empty one raises `EmptyScopeError`;
- a filter the backend cannot express raises `UnsupportedFilter`; nothing is ever widened;
- a record's scope is the ScopeKey it was written to — never read from content or metadata;
- an entry with `memory_ids` returns only those memories of its scope;
- `put` with an idempotency key already used in that scope returns the first record unchanged;
- `search` returns at most `limit` hits *from the permitted scopes*, the best ones, even when
  the permitted rows are a tiny fraction of the store (no post-filtering a global top-k);
- records whose scope cannot be established are never returned;
- `put` says whether it created the memory (`StoredMemory.created`), so the bridge can tell a
  fresh write from an idempotent retry without side channels;
- `find_by_idempotency_key` answers "did a write with this key land?" (crash reconciliation);
- `list_page` walks a scope of any size with an opaque cursor (erasure, export, admin lists).
"""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from adapters.errors import EmptyScopeError, InvalidRequest
from adapters.scopes import ScopeKey, ScopeSet
from adapters.frozen import quick_init

__all__ = [
    "Status",
    "Provenance",
    "NewMemory",
    "StoredMemory",
    "MemoryPatch",
    "Hit",
    "SearchQuery",
    "SearchResult",
    "ConversationMessage",
    "CaptureReceipt",
    "ConversationBackend",
    "Capabilities",
    "MemoryBackend",
    "MetadataValue",
    "require_scope",
    "require_scope_set",
    "SubjectEraser",
    "ListPage",
    "StoreMarker",
    "StoreBinding",
]

MetadataValue = str | int | float | bool | None


class Status(str, enum.Enum):
    ACTIVE = "active"
    PENDING = "pending"  # awaiting approval; not recalled by default
    SUPERSEDED = "superseded"  # replaced by a newer memory (promotion, correction)
    FORGOTTEN = "forgotten"  # tombstone kept only where a backend cannot hard-delete


def _frozen_metadata(value: Mapping[str, MetadataValue] | None) -> Mapping[str, MetadataValue]:
    data = dict(value or {})
    for k, v in data.items():
        if not isinstance(k, str):
            raise InvalidRequest(f"metadata keys must be strings, got {type(k).__name__}")
        if not isinstance(v, (str, int, float, bool, type(None))):
            raise InvalidRequest(f"metadata value for {k!r} must be a scalar, got {type(v).__name__}")
    return MappingProxyType(data)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who wrote a memory and from what. Filled by the bridge from the identity, never the body."""

    author_user_id: str
    author_agent_id: str
    session_id: str | None = None
    source_message_ids: tuple[str, ...] = ()
    injected_by: str | None = None  # agent that injected this memory into a child's context
    derived_from: tuple[str, ...] = ()  # memory ids a write-back was derived from
    grant_id: str | None = None  # the grant under which a cross-scope write/approval happened

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; every adapter stores provenance through this one pair of functions."""
        return {
            "author_user_id": self.author_user_id,
            "author_agent_id": self.author_agent_id,
            "session_id": self.session_id,
            "source_message_ids": list(self.source_message_ids),
            "injected_by": self.injected_by,
            "derived_from": list(self.derived_from),
            "grant_id": self.grant_id,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Provenance":
        """Inverse of `to_dict`; KeyError/TypeError on a record that lacks the author."""
        return cls(
            author_user_id=str(d["author_user_id"]),
            author_agent_id=str(d["author_agent_id"]),
            session_id=d.get("session_id"),
            source_message_ids=tuple(d.get("source_message_ids") or ()),
            injected_by=d.get("injected_by"),
            derived_from=tuple(d.get("derived_from") or ()),
            grant_id=d.get("grant_id"),
        )


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to store. It carries no scope: the ScopeKey passed to `put` is the scope."""

    content: str
    kind: str
    provenance: Provenance
    status: Status = Status.ACTIVE
    confidence: float = 1.0
    subject_user_id: str | None = None  # whose personal data this is (forget-by-subject)
    metadata: Mapping[str, MetadataValue] = field(default_factory=dict)
    created_at: float | None = None  # epoch seconds; the adapter stamps "now" when None
    #: Epoch seconds after which the memory is never a candidate again (None: it never expires).
    #: Adapters exclude it inside their queries (`SearchQuery.now`); the purge deletes it later.
    expires_at: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", _frozen_metadata(self.metadata))
        if not (0.0 <= self.confidence <= 1.0):
            raise InvalidRequest(f"confidence must be within [0, 1], got {self.confidence}")
        _check_expiry(self.expires_at)


def _check_expiry(value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
        raise InvalidRequest(f"expires_at must be finite epoch seconds or None, got {type(value).__name__}")


@quick_init  # built by the dozen per recall (adapters/frozen.py)
@dataclass(frozen=True, slots=True)
class StoredMemory:
    """A memory as the backend holds it. `scope` is where it was stored — set by the adapter."""

    id: str
    scope: ScopeKey
    content: str
    kind: str
    status: Status
    confidence: float
    provenance: Provenance
    subject_user_id: str | None
    metadata: Mapping[str, MetadataValue]
    created_at: float
    updated_at: float
    expires_at: float | None = None  # epoch seconds; None: never expires
    #: Set by `put` only: True when this call stored the memory, False when an earlier put with
    #: the same idempotency key had (the record returned is that first one). None elsewhere.
    #: It describes the call, not the record, so two views of one memory compare equal.
    created: bool | None = field(default=None, compare=False)

    @classmethod
    def from_new(cls, memory_id: str, scope: ScopeKey, new: NewMemory, now: float | None = None) -> "StoredMemory":
        stamp = time.time() if now is None else now
        created = new.created_at if new.created_at is not None else stamp
        return cls(
            id=memory_id,
            scope=scope,
            content=new.content,
            kind=new.kind,
            status=new.status,
            confidence=new.confidence,
            provenance=new.provenance,
            subject_user_id=new.subject_user_id,
            metadata=new.metadata,
            created_at=created,
            updated_at=stamp,
            expires_at=new.expires_at,
        )

    def expired(self, now: float) -> bool:
        """True once `now` has reached `expires_at`: from then on it is never a candidate."""
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True, slots=True)
class MemoryPatch:
    """An in-place change. There is deliberately no field that moves a memory to another scope."""

    content: str | None = None
    status: Status | None = None
    confidence: float | None = None
    metadata: Mapping[str, MetadataValue] | None = None

    def __post_init__(self) -> None:
        if self.metadata is not None:
            object.__setattr__(self, "metadata", _frozen_metadata(self.metadata))

    def apply(self, memory: StoredMemory, now: float | None = None) -> StoredMemory:
        changes: dict[str, Any] = {k: v for k in ("content", "status", "confidence", "metadata") if (v := getattr(self, k)) is not None}
        changes["updated_at"] = time.time() if now is None else now
        return replace(memory, **changes)


@quick_init  # one per search hit (adapters/frozen.py)
@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the memory, the ScopeKey it was read from, its semantic score in [0, 1]."""

    memory: StoredMemory
    scope: ScopeKey
    score: float


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A semantic search bound to a ScopeSet. `filters` are backend-specific and checked strictly."""

    scopes: ScopeSet
    text: str
    limit: int = 10
    kinds: frozenset[str] | None = None
    statuses: frozenset[Status] = frozenset({Status.ACTIVE})
    filters: Mapping[str, Any] = field(default_factory=dict)
    #: The bridge's clock (epoch seconds): memories with `expires_at <= now` are excluded INSIDE
    #: the backend query. None only for direct adapter callers: adapters then use `time.time()`.
    now: float | None = None

    def __post_init__(self) -> None:
        if self.now is not None and (isinstance(self.now, bool) or not isinstance(self.now, (int, float)) or not math.isfinite(self.now)):
            raise InvalidRequest(f"now must be finite epoch seconds, got {self.now!r}")
        if not isinstance(self.scopes, ScopeSet):
            raise EmptyScopeError("SearchQuery.scopes must be a non-empty ScopeSet")
        if not isinstance(self.limit, int) or self.limit < 1:
            raise InvalidRequest(f"limit must be a positive integer, got {self.limit!r}")
        if not self.statuses:
            raise InvalidRequest("statuses must not be empty")
        if self.kinds is not None and not self.kinds:
            raise InvalidRequest("kinds, when given, must not be empty (use None for every kind)")
        object.__setattr__(self, "filters", MappingProxyType(dict(self.filters)))

    def at(self) -> float:
        """The instant expiry is judged at: the bridge's clock, or the adapter's own."""
        now = getattr(self, "now", None)  # a query forged past __init__ (object.__new__) has no field at all
        return time.time() if now is None else float(now)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits, best first. `failed_scopes` non-empty means the result is PARTIAL."""

    hits: tuple[Hit, ...]
    failed_scopes: tuple[ScopeKey, ...] = ()
    failure_reasons: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.failed_scopes


@dataclass(frozen=True, slots=True)
class ConversationMessage:
    """One message of a captured conversation (for backends that extract memories themselves)."""

    role: str  # "user" | "assistant" | "system"
    content: str
    message_id: str | None = None
    time: float | None = None


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do; the contract suite skips what is False and names the flag."""

    server_side_extraction: bool = False  # `capture` extracts memories on the server
    memory_id_restriction: bool = True  # honours ScopeEntry.memory_ids inside search
    list_scopes: bool = True  # can enumerate a tenant's scopes (needed for forget-by-subject)
    search_after_write_lag: bool = False  # writes become searchable asynchronously
    supported_filters: frozenset[str] = frozenset()  # keys accepted in SearchQuery.filters
    #: True: the backend's own query excludes expired memories (`SearchQuery.now`) before it
    #: ranks. False: the service cannot express it; the adapter drops them before a hit leaves
    #: (over-fetching), and the bridge's guard drops any that still arrive, counted and logged.
    expiry_in_query: bool = True


def require_scope(scope: object) -> ScopeKey:
    """Guard for single-scope calls: a ScopeKey, nothing else (None is never 'all')."""
    if not isinstance(scope, ScopeKey):
        raise EmptyScopeError(f"a call must name one ScopeKey, got {scope!r}")
    return scope


def require_scope_set(scopes: object) -> ScopeSet:
    """Guard for searches: a ScopeSet with at least one entry — even one forged past its checks."""
    if not isinstance(scopes, ScopeSet) or not scopes.entries:
        raise EmptyScopeError(f"a search must name a non-empty ScopeSet, got {scopes!r}")
    return scopes


@runtime_checkable
class MemoryBackend(Protocol):
    """Async protocol every adapter implements. The sync facade is `adapters.sync.SyncBackend`."""

    name: str
    capabilities: Capabilities

    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        """Store `memory` in `scope`. The same key in the same scope returns the first record."""
        ...

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        """The memory `memory_id` of `scope`; `NotFound` if it lives elsewhere or nowhere."""
        ...

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        ...

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        """Hard-delete one memory (record, vector, caches). False if it was not there."""
        ...

    async def search(self, query: SearchQuery) -> SearchResult:
        ...

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        """Memories of one scope, newest first (for admin, forget-by-subject and tests)."""
        ...

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        """Every scope of `tenant_id` holding at least one memory (never another tenant's)."""
        ...

    async def list_page(
        self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None
    ) -> "ListPage":
        """One page of a scope's memories in a stable order; pass `next_cursor` back for the next.

        Walks a scope of any size (erasure must never give up on a large scope). The cursor is
        opaque to the bridge and bound to `scope`; a cursor from another scope is `InvalidRequest`.
        """
        ...

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        """The memory a put with this key stored in `scope`, or None. Used at open to reconcile
        writes a crash interrupted between the backend commit and the audit row."""
        ...

    async def aclose(self) -> None:
        ...


@dataclass(frozen=True, slots=True)
class ListPage:
    """A page of `list_page`; `next_cursor` is None on the last page."""

    memories: tuple[StoredMemory, ...]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class StoreMarker:
    """Which store this is and how far it has got. The bridge records both in its own state
    after every write and refuses to open when the store it finds disagrees (a replaced,
    emptied or rolled-back store must not be mistaken for the one its audit log describes)."""

    store_id: str
    writes: int  # committed writes, monotonic for one store; never decreases


@runtime_checkable
class StoreBinding(Protocol):
    """Optional: a backend whose files the bridge's host owns (the local store) reports a
    `StoreMarker`; remote services answer for their own durability and need not."""

    async def store_marker(self) -> StoreMarker:
        ...


@dataclass(frozen=True, slots=True)
class CaptureReceipt:
    """What a server-side extraction accepted. Memories appear later (see search_after_write_lag)."""

    backend_session_id: str
    accepted_messages: int
    task_id: str | None = None


@runtime_checkable
class ConversationBackend(Protocol):
    """Optional: backends with `capabilities.server_side_extraction` also implement `capture`.

    `session_key` is derived by the bridge from (identity fingerprint, client session id); the
    adapter maps it into the backend's session alphabet injectively, so two identities never
    share or overwrite a backend session.
    """

    async def capture(
        self,
        scope: ScopeKey,
        messages: Sequence[ConversationMessage],
        *,
        session_key: str,
        provenance: Provenance,
    ) -> CaptureReceipt:
        ...


@runtime_checkable
class SubjectEraser(Protocol):
    """Optional: a backend that keeps bookkeeping of its own (capture records, scope registries)
    implements this so a forget-by-subject removes those traces too. The bridge deletes the
    memories themselves through the ordinary protocol first, then calls this."""

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Delete every adapter-internal record naming `subject_user_id` in `tenant_id`; return how many."""
        ...
