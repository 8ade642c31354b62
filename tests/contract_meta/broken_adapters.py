"""Deliberately broken adapters (each wraps a real LocalBackend and breaks ONE rule), registered
for the contract suite so `test_suite_catches_broken_adapters.py` can prove the suite fails them.

Load with `-p tests.contract_meta.broken_adapters` (the repository root on PYTHONPATH). Never use these anywhere else.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import AsyncIterator, Sequence

from adapters.base import MemoryPatch, NewMemory, SearchQuery, SearchResult, Status, StoredMemory
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey, ScopeSet
from contract_tests.backends.local import _insert_unscoped, local_backend
from contract_tests.registry import register_adapter


class _Wrapper:
    """Delegates every call to a LocalBackend and remembers every scope written."""

    def __init__(self, inner: LocalBackend, name: str) -> None:
        self.inner = inner
        self.name = name
        self.capabilities = inner.capabilities
        self.known: set[ScopeKey] = set()

    def everything(self, extra: ScopeSet | None = None) -> ScopeSet:
        keys = set(self.known) | (set(extra.keys) if extra else set())
        return ScopeSet.of(*sorted(keys, key=str)) if keys else ScopeSet.of(ScopeKey.global_())

    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        if isinstance(scope, ScopeKey):
            self.known.add(scope)
        return await self.inner.put(scope, memory, idempotency_key=idempotency_key)

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        return await self.inner.get(scope, memory_id)

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        return await self.inner.update(scope, memory_id, patch)

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        return await self.inner.delete(scope, memory_id)

    async def search(self, query: SearchQuery) -> SearchResult:
        return await self.inner.search(query)

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        return await self.inner.list(scope, statuses=statuses, limit=limit)

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        return await self.inner.list_scopes(tenant_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


class NoScopeFilter(_Wrapper):
    """Drops the scope filter: searches every partition it ever wrote."""

    async def search(self, query: SearchQuery) -> SearchResult:
        return await self.inner.search(replace(query, scopes=self.everything(query.scopes)))


class PostFilterTopK(_Wrapper):
    """Takes the global top-k first, then filters to the permitted scopes (hawk-bridge, mem0 + FAISS)."""

    async def search(self, query: SearchQuery) -> SearchResult:
        result = await self.inner.search(replace(query, scopes=self.everything(query.scopes)))
        return SearchResult(tuple(h for h in result.hits if query.scopes.permits(h.scope, h.memory.id)))


class TrustsMetadataUserId(_Wrapper):
    """Takes the owner from metadata['user_id'] (mem0 #6277): writes and updates move records."""

    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        owner = memory.metadata.get("user_id")
        if isinstance(owner, str) and isinstance(scope, ScopeKey) and scope.tenant_id:
            scope = ScopeKey.private(scope.tenant_id, owner)
        return await super().put(scope, memory, idempotency_key=idempotency_key)

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        owner = (patch.metadata or {}).get("user_id")
        if isinstance(owner, str) and scope.tenant_id:
            old = await self.inner.get(scope, memory_id)
            moved = patch.apply(old)
            await self.inner.delete(scope, memory_id)
            new = NewMemory(moved.content, moved.kind, moved.provenance, moved.status, moved.confidence, moved.subject_user_id, moved.metadata)
            return await super().put(ScopeKey.private(scope.tenant_id, owner), new, idempotency_key="moved" + memory_id)
        return await self.inner.update(scope, memory_id, patch)


class EmptySetIsAll(_Wrapper):
    """Treats an empty (or missing) scope set as "all scopes" (mem0 + Qdrant)."""

    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query.scopes, ScopeSet) or len(query.scopes) == 0:
            return await self.inner.search(replace(query, scopes=self.everything()))
        return await self.inner.search(query)


class StaleCacheAfterDelete(_Wrapper):
    """Caches gets and searches; writes invalidate the cache, deletes forget to (LongMemory #186)."""

    def __init__(self, inner: LocalBackend, name: str) -> None:
        super().__init__(inner, name)
        self.searches: dict[object, SearchResult] = {}
        self.gets: dict[tuple[ScopeKey, str], StoredMemory] = {}

    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        self.searches.clear()
        return await super().put(scope, memory, idempotency_key=idempotency_key)

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        self.searches.clear()
        self.gets.pop((scope, memory_id), None)
        return await super().update(scope, memory_id, patch)

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        if (scope, memory_id) not in self.gets:
            self.gets[(scope, memory_id)] = await self.inner.get(scope, memory_id)
        return self.gets[(scope, memory_id)]

    async def search(self, query: SearchQuery) -> SearchResult:
        key = (tuple(sorted((str(e.key), e.memory_ids) for e in query.scopes)), query.text, query.limit, query.kinds, query.statuses)
        if key not in self.searches:
            self.searches[key] = await self.inner.search(query)
        return self.searches[key]


BROKEN = {
    "broken-no-scope-filter": NoScopeFilter,
    "broken-post-filter-top-k": PostFilterTopK,
    "broken-trusts-metadata-user-id": TrustsMetadataUserId,
    "broken-empty-set-is-all": EmptySetIsAll,
    "broken-stale-cache-after-delete": StaleCacheAfterDelete,
}


def _register(name: str, cls: type[_Wrapper]) -> None:
    async def unscoped(backend: _Wrapper, tenant_id: str, content: str) -> None:
        await _insert_unscoped(backend.inner, tenant_id, content)

    @register_adapter(name, description=cls.__doc__ or "", insert_unscoped=unscoped)  # type: ignore[arg-type]
    @contextlib.asynccontextmanager
    async def factory() -> AsyncIterator[_Wrapper]:
        async with local_backend() as inner:
            yield cls(inner, name)


for _name, _cls in BROKEN.items():
    _register(_name, _cls)
