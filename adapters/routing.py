"""One service, several backends: a `MemoryBackend` that sends every call to the backend its
tenant is routed to (tenant `acme` on hosted Viking, `dev` on the local store, `globex` on
PostgreSQL), the global scope to the backend the routing table names as its home.

Why here and not above the bridge: the bridge (policy, audit, state) stays one, so grants,
manifests and the audit sequence span every tenant as before; only where a memory lives changes.
Each tenant's memories live on exactly ONE backend, so a tenant's isolation is its backend's own
plus the bridge's guard, and no backend ever holds another tenant's rows to leak.

What it must never do:
- default: a tenant missing from the table is refused (`TenantNotRouted`), never sent to some
  backend where its memories would be written beside another tenant's and lost to the next table;
- widen: a search is split by backend, each backend gets only the entries routed to it, and a
  hit from a backend for a scope not routed there (or not asked for) is dropped, never returned;
- hide a failure: a sub-search that fails makes the search fail (it re-raises, after every
  sub-search has finished), and failed scopes of each backend are passed up unchanged, so the
  bridge's `RecallIncomplete` still names them.

Scores of different backends are merged by value (the bridge re-ranks every hit by scope weight,
confidence and freshness anyway); backends with different embedders score on different scales.
Capabilities are the conservative meet of the backends' (a capability every backend has).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Mapping, Sequence

from adapters.base import (
    CaptureReceipt,
    Capabilities,
    ConversationBackend,
    ConversationMessage,
    ListPage,
    MemoryBackend,
    MemoryPatch,
    NewMemory,
    Provenance,
    SearchQuery,
    SearchResult,
    Status,
    StoredMemory,
    SubjectEraser,
    require_scope,
    require_scope_set,
)
from adapters.errors import BackendMisconfigured, CorruptRecord, InvalidRequest, TenantNotRouted
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet

__all__ = ["RoutedBackend", "meet_capabilities"]


def meet_capabilities(caps: Sequence[Capabilities]) -> Capabilities:
    """What every backend can do (and any backend's lag): the suite and the bridge rely on no more."""
    filters = frozenset.intersection(*(c.supported_filters for c in caps)) if caps else frozenset()
    return Capabilities(
        server_side_extraction=all(c.server_side_extraction for c in caps),
        memory_id_restriction=all(c.memory_id_restriction for c in caps),
        list_scopes=all(c.list_scopes for c in caps),
        search_after_write_lag=any(c.search_after_write_lag for c in caps),
        supported_filters=filters,
        expiry_in_query=all(c.expiry_in_query for c in caps),
    )


class RoutedBackend:
    """`RoutedBackend(backends={name: backend}, tenants={tenant: name}, global_home=name | None)`.

    `global_home` None: the global scope is refused like an unrouted tenant. The routed backends
    are owned: `aclose` closes them all."""

    name = "routed"

    def __init__(self, backends: Mapping[str, MemoryBackend], tenants: Mapping[str, str], *, global_home: str | None) -> None:
        if not backends:
            raise BackendMisconfigured("a routing table needs at least one backend", backend=self.name)
        unknown = sorted({n for n in tenants.values() if n not in backends} | ({global_home} - set(backends) if global_home else set()))
        if unknown:
            raise BackendMisconfigured(f"the routing table routes to backends it does not define: {', '.join(unknown)}", backend=self.name)
        self.backends = dict(backends)
        self.tenants = dict(tenants)
        self.global_home = global_home
        self.capabilities = meet_capabilities([b.capabilities for b in self.backends.values()])

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={b!r}" for n, b in self.backends.items())
        return f"RoutedBackend({inner}; {len(self.tenants)} tenants, global on {self.global_home})"

    # -- the routing table ------------------------------------------------------------------
    def backend_name_for(self, tenant_id: str | None) -> str:
        """The backend holding `tenant_id`'s memories (None: the global scope); refused if none."""
        if tenant_id is None:
            if self.global_home is None:
                raise TenantNotRouted("the routing table names no home for the global scope", backend=self.name, scope=ScopeKey.global_())
            return self.global_home
        name = self.tenants.get(tenant_id)
        if name is None:
            raise TenantNotRouted(
                f"tenant {tenant_id!r} is not in this service's routing table: no backend holds its memories here", backend=self.name,
            )
        return name

    def routes(self) -> dict[str, str]:
        """tenant -> backend name."""
        return dict(self.tenants)

    def home_of(self, tenant_id: str) -> str:
        """Where `tenant_id`'s memories live, as the console shows it: `name (kind)`."""
        name = self.backend_name_for(tenant_id)
        return f"{name} ({self.backends[name].name})"

    def _for(self, scope: ScopeKey) -> MemoryBackend:
        return self.backends[self.backend_name_for(require_scope(scope).tenant_id)]

    @staticmethod
    def _own(scope: ScopeKey, memory: StoredMemory, backend: str) -> StoredMemory:
        if memory.scope != scope:  # a backend answered for another place: never pass it on
            raise CorruptRecord(f"backend {backend!r} answered a memory of another scope for {scope}", backend=backend, scope=scope)
        return memory

    # -- one scope: one backend -------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        backend = self._for(scope)
        return self._own(scope, await backend.put(scope, memory, idempotency_key=idempotency_key), backend.name)

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        backend = self._for(scope)
        return self._own(scope, await backend.get(scope, memory_id), backend.name)

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        backend = self._for(scope)
        return self._own(scope, await backend.update(scope, memory_id, patch), backend.name)

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        return await self._for(scope).delete(scope, memory_id)

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        backend = self._for(scope)
        return [m for m in await backend.list(scope, statuses=statuses, limit=limit) if m.scope == scope]

    async def list_page(self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None) -> ListPage:
        backend = self._for(scope)
        page = await backend.list_page(scope, cursor=cursor, limit=limit, statuses=statuses)
        return ListPage(tuple(m for m in page.memories if m.scope == scope), page.next_cursor)

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        found = await self._for(scope).find_by_idempotency_key(scope, idempotency_key)
        return None if found is None or found.scope != scope else found

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        backend = self.backends[self.backend_name_for(tenant_id)]
        return [k for k in await backend.list_scopes(tenant_id) if k.tenant_id == tenant_id]

    async def capture(self, scope: ScopeKey, messages: Sequence[ConversationMessage], *, session_key: str, provenance: Provenance) -> CaptureReceipt:
        backend = self._for(scope)
        if not isinstance(backend, ConversationBackend):
            raise InvalidRequest(f"backend {backend.name!r} of this tenant does not extract on the server", backend=self.name, scope=scope)
        return await backend.capture(scope, messages, session_key=session_key, provenance=provenance)

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        backend = self.backends[self.backend_name_for(tenant_id)]
        return await backend.erase_subject_traces(tenant_id, subject_user_id) if isinstance(backend, SubjectEraser) else 0

    # -- a ScopeSet: split by backend, merged, failing closed -------------------------------
    async def search(self, query: SearchQuery) -> SearchResult:
        scopes = require_scope_set(query.scopes)
        groups: dict[str, list[ScopeEntry]] = {}
        for entry in scopes:  # every entry routed first: one unrouted tenant refuses the whole search
            groups.setdefault(self.backend_name_for(entry.key.tenant_id), []).append(entry)
        names = list(groups)
        answers = await asyncio.gather(
            *(self.backends[n].search(replace(query, scopes=ScopeSet.from_entries(groups[n]))) for n in names), return_exceptions=True,
        )
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        hits: list[Any] = []
        failed: list[ScopeKey] = []
        reasons: list[str] = []
        for name, answer in zip(names, answers):
            asked = {e.key for e in groups[name]}
            assert isinstance(answer, SearchResult)
            # a hit for a scope not sent to this backend is another backend's row: dropped
            hits.extend(h for h in answer.hits if h.scope in asked and h.memory.scope == h.scope)
            failed.extend(answer.failed_scopes)
            reasons.extend(f"{name}: {r}" for r in answer.failure_reasons)
        hits.sort(key=lambda h: h.score, reverse=True)
        return SearchResult(tuple(hits[: query.limit]), tuple(failed), tuple(reasons))

    async def readiness(self) -> None:
        """Every backend of the table answers (the service's /ready): each is asked what a lone
        backend is asked, the scopes of a tenant that holds nothing; any failure is raised."""
        results = await asyncio.gather(*(b.list_scopes("readiness-probe") for b in self.backends.values()), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def aclose(self) -> None:
        results = await asyncio.gather(*(b.aclose() for b in self.backends.values()), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
