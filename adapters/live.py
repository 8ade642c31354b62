"""The liveness rule, applied once: a view of a backend in which an expired memory is gone.

`StoredMemory.expired(now)` is the rule (expired once the clock reaches `expires_at`); this view
is the one place that applies it to reads, so every path that reads through it — get, list,
find-by-key, search, and everything built on them (the approval queue, edit, export, inject,
promote, the console) — sees an expired memory exactly as it sees a forgotten one: absent
(`BackendNotFound`, `None`, left out of a page or a result). The bridge's runtime hands the view
to every handler as `rt.backend`; the raw store (`rt.store`) is for the few paths that must see
expired records to remove them: the purge, the write path (an expired holder of a key is retired,
not returned) and crash recovery, erasure of a subject's data, and the recall guard (which applies
the same rule and also reports a backend that let an expired hit through). A migration reads its
source through the view too, at one instant for the whole run.

Writes (put, update, delete) pass through: nothing reaches an expired memory's id without a read
first, and every read here refuses it. Every other attribute (name, capabilities, store marker,
capture, erasure hooks) is the store's own.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from adapters.base import ListPage, MemoryBackend, SearchQuery, SearchResult, Status, StoredMemory
from adapters.errors import BackendNotFound
from adapters.scopes import ScopeKey

__all__ = ["LiveView", "live_view", "raw_store"]


class LiveView:
    """`store` with every memory expired at `clock()` hidden from reads (see the module docstring)."""

    def __init__(self, store: MemoryBackend, clock: Callable[[], float]) -> None:
        self._store = raw_store(store)
        self._clock = clock

    @property
    def store(self) -> MemoryBackend:
        return self._store

    def __getattr__(self, name: str) -> Any:  # name, capabilities, store_marker, capture, ...
        return getattr(self._store, name)

    def _live(self, memories: Sequence[StoredMemory]) -> tuple[StoredMemory, ...]:
        now = self._clock()
        return tuple(m for m in memories if not m.expired(now))

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        memory = await self._store.get(scope, memory_id)
        if memory.expired(self._clock()):
            raise BackendNotFound(f"no memory {memory_id} in {scope} (it expired at {memory.expires_at})")
        return memory

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        memory = await self._store.find_by_idempotency_key(scope, idempotency_key)
        return None if memory is None or memory.expired(self._clock()) else memory

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        return list(self._live(await self._store.list(scope, statuses=statuses, limit=limit)))

    async def list_page(
        self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None
    ) -> ListPage:
        """A page may come back short (expired memories left out); the cursor still walks on."""
        page = await self._store.list_page(scope, cursor=cursor, limit=limit, statuses=statuses)
        return ListPage(self._live(page.memories), page.next_cursor)

    async def search(self, query: SearchQuery) -> SearchResult:
        """Hits expired at the query's own instant are left out (adapters exclude them in the query
        already; this is the wall for one that cannot)."""
        result = await self._store.search(query)
        at = query.at()
        return SearchResult(tuple(h for h in result.hits if not h.memory.expired(at)), result.failed_scopes, result.failure_reasons)


def live_view(store: MemoryBackend, clock: Callable[[], float]) -> MemoryBackend:
    """`store` seen through the liveness rule at `clock()` (idempotent: a view is not wrapped twice)."""
    return LiveView(store, clock)  # type: ignore[return-value]


def raw_store(backend: Any) -> MemoryBackend:
    """The store under a view (or the backend itself)."""
    return backend.store if isinstance(backend, LiveView) else backend
