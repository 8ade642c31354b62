"""Reads of the Viking backend: search over a ScopeSet, get, list, list_page and the lookup by
idempotency key.

Why `search` never raises for a failed backend call: one scope failing and all of them read
alike, so failed scopes land in `failed_scopes` with a redacted reason. What it must never do:
search a principal outside the ScopeSet, let a hit leave that `ScopeSet.permits` refuses, or
return an expired record (Viking's filter has no expiry field, so it is dropped here).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any, Mapping, Sequence

from adapters.base import Hit, ListPage, SearchQuery, SearchResult, Status, StoredMemory, require_scope, require_scope_set
from adapters.errors import BackendError, CorruptRecord, InvalidRequest, BackendNotFound, BackendUnavailable, UnsupportedFilter
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.envelope import memory_id_for
from adapters.viking.mapping import PrincipalMap, decode_record
from adapters.viking.rows import SERVICE_MAX_LIMIT, VikingRowsBase, OUR_ID, FetchedRow, SearchTask, chunks, dedupe, row_time

#: The same logger as the rest of this backend, whichever concern logs.
log = logging.getLogger("adapters.viking")


class VikingReads(VikingRowsBase):
    """search / get / list / list_page / find_by_idempotency_key over guarded rows."""

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        """The memory a put with this key stored in `scope`, or None. A write acknowledged but
        not yet searchable is found through the write ledger. Under search lag a write whose
        answer was lost may read None until it becomes searchable (reconcile_writes settles it)."""
        scope = require_scope(scope)
        collection = self.collection_for(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        rows = await self._by_id(scope, memory_id)
        if rows:
            return rows[0].memory
        row = self.ledger.get(collection, self.principal(scope), memory_id)
        if row is None or row.event_id is None:
            return None
        try:
            return decode_record(row.call["memory_info"], scope, memory_id)
        except CorruptRecord as exc:
            self.alarms.raise_alarm(scope, f"write ledger: {exc}")
            return None

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        scope = require_scope(scope)
        rows = await self._by_id(scope, memory_id) if isinstance(memory_id, str) else []
        if not rows:
            raise BackendNotFound(f"no memory {memory_id!r} in this scope", backend=self.name, scope=scope)
        return rows[0].memory

    # -- reads ----------------------------------------------------------------------------
    def _pushdown(self, filters: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in filters.items():
            if key not in self.capabilities.supported_filters:
                raise UnsupportedFilter(f"filter {key!r} is not supported (supported: start_time, end_time)", backend=self.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UnsupportedFilter(f"filter {key!r} must be epoch seconds", backend=self.name)
            out[key] = int(value * 1000)
        return out

    def _plan(self, scopes: ScopeSet) -> list[SearchTask]:
        by_coll: dict[str, list[ScopeKey]] = defaultdict(list)
        restricted: dict[str, list[ScopeKey]] = defaultdict(list)
        for entry in scopes:
            coll = self.collection_for(entry.key)
            ids = entry.memory_ids
            if ids is not None and all(OUR_ID.match(i) for i in ids):
                restricted[coll].append(entry.key)
            else:
                by_coll[coll].append(entry.key)
        tasks: list[SearchTask] = []
        for coll, keys in by_coll.items():
            for chunk in chunks(keys, self.config.ids_per_call):
                tasks.append(SearchTask(coll, chunk))
        for coll, keys in restricted.items():
            for chunk in chunks(keys, self.config.ids_per_call):
                ids = sorted({i for k in chunk for i in (scopes.entry(k).memory_ids or ())})
                for id_chunk in chunks(ids, self.config.ids_per_call):
                    tasks.append(SearchTask(coll, chunk, id_chunk))
        return tasks

    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest("search takes a SearchQuery", backend=self.name)
        scopes = require_scope_set(query.scopes)
        extra = self._pushdown(query.filters)
        tasks = self._plan(scopes)
        text = query.text.strip() or None
        if text is not None and len(text) > 4000:
            raise InvalidRequest("query text is longer than the service's 4000 characters", backend=self.name)

        now = query.at()

        def keep(m: StoredMemory) -> bool:
            # expiry travels in the record envelope: Viking's search filter has no field for it
            # (only user/assistant/group/session ids, memory_type and a start/end on event time),
            # so, like status and kind, it is applied to the over-fetched candidates here
            return scopes.permits(m.scope, m.id) and m.status in query.statuses and (query.kinds is None or m.kind in query.kinds) and not m.expired(now)

        async def run(task: SearchTask) -> list[FetchedRow]:
            flt = dict(extra)
            if task.group_ids is not None:
                flt["group_id"] = task.group_ids
            return await self._fetch_filtered(task.collection, task.scopes, query=text, need=query.limit, keep=keep, extra=flt)

        results = await asyncio.gather(*(run(t) for t in tasks), return_exceptions=True)
        rows: list[FetchedRow] = []
        failed: list[ScopeKey] = []
        reasons: list[str] = []
        for task, res in zip(tasks, results):
            if isinstance(res, BaseException):
                if not isinstance(res, Exception):
                    raise res  # cancellation, interpreter exit: not a backend failure
                # Every failure of a backend call is a failed scope, never an exception: one
                # failing scope and all of them read the same; the bridge raises
                # RecallIncomplete with these reasons.
                reason = self._failure_reason(res)
                for key in task.scopes:
                    if key not in failed:
                        failed.append(key)
                        reasons.append(f"{key}: {reason}")
            else:
                rows.extend(res)
        merged = dedupe(rows)
        merged.sort(key=lambda r: (-r.score, -r.memory.created_at, r.memory.id))
        hits = tuple(Hit(memory=r.memory, scope=r.memory.scope, score=r.score) for r in merged[: query.limit])
        return SearchResult(hits=hits, failed_scopes=tuple(failed), failure_reasons=tuple(reasons))

    def _failure_reason(self, exc: Exception) -> str:
        """`Type: message` of a failed call, without secrets (the client's redaction)."""
        if isinstance(exc, BackendError):
            text = f"{type(exc).__name__}: {exc}"
        else:  # a bug or an unexpected answer: the type only, the details stay in the log
            log.error("viking search of one task failed unexpectedly", exc_info=exc)
            text = f"{type(exc).__name__} (unexpected; see the adapter log)"
        return self.client.scrub(text)[:500]

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        scope = require_scope(scope)
        if not isinstance(limit, int) or limit < 1:
            raise InvalidRequest("limit must be a positive integer", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        rows = await self._fetch_filtered(
            collection, [scope], query=None, need=limit, keep=lambda m: statuses is None or m.status in statuses
        )
        mems = [r.memory for r in rows]
        mems.sort(key=lambda m: (-m.created_at, m.id))
        return mems[:limit]

    async def list_page(
        self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None
    ) -> ListPage:
        """One page of the scope's memories, newest first; pass `next_cursor` back for the next.

        The service has no cursor and answers at most 5000 rows per search, so a page is a
        query-less search (newest first) below the cursor's time (`end_time`, inclusive), skipping
        the rows already passed at exactly that millisecond. A scope of any size is walked.
        The cursor is signed and bound to `scope` (`adapters.shared.cursor`): another scope's or an edited
        one is `InvalidRequest`. Only searchable rows are seen (writes appear after the lag)."""
        scope = require_scope(scope)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidRequest("limit must be a positive integer", backend=self.name, scope=scope)
        state = self._cursors.open(scope, cursor) if cursor is not None else {}
        boundary = state.get("t")
        passed_rows = set(state.get("r") or ())
        passed_ids = set(state.get("m") or ())
        if (boundary is not None and (isinstance(boundary, bool) or not isinstance(boundary, int))) or not all(
            isinstance(x, str) for x in (*passed_rows, *passed_ids)
        ):
            raise InvalidRequest("malformed cursor", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        pmap = PrincipalMap([scope], self._prefix)
        out: list[StoredMemory] = []
        fetch = min(SERVICE_MAX_LIMIT, limit + len(passed_rows) + 1)
        while True:
            extra = {"end_time": boundary} if boundary is not None else None
            rows = await self._search_rows(collection, pmap.principals, query=None, limit=fetch, extra=extra)
            exhausted = len(rows) < fetch
            fresh = [r for r in rows if not (row_time(r) == boundary and str(r.get("id")) in passed_rows)]
            if not fresh:
                if exhausted:
                    return ListPage(tuple(out), None)
                if fetch >= SERVICE_MAX_LIMIT:
                    raise BackendUnavailable(f"cannot page past {SERVICE_MAX_LIMIT} records sharing one millisecond", backend=self.name, scope=scope)
                fetch = min(SERVICE_MAX_LIMIT, fetch * 4)
                continue
            memories = {r.viking_id: r.memory for r in await self._rows_to_memories(collection, fresh, pmap)}
            for row in fresh:
                t = row_time(row)
                if t != boundary:
                    boundary, passed_rows, passed_ids = t, set(), set()
                vid = str(row.get("id"))
                passed_rows.add(vid)
                mem = memories.get(vid)
                if mem is None or mem.id in passed_ids or (statuses is not None and mem.status not in statuses):
                    continue
                passed_ids.add(mem.id)
                out.append(mem)
                if len(out) >= limit:
                    return ListPage(tuple(out), self._cursors.mint(scope, {"t": boundary, "r": sorted(passed_rows), "m": sorted(passed_ids)}))
            if exhausted:
                return ListPage(tuple(out), None)
            fetch = min(SERVICE_MAX_LIMIT, max(fetch, limit - len(out) + len(passed_rows) + 1))
