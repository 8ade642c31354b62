"""Search of the OpenViking backend: each ScopeEntry of the ScopeSet searched as its own
principal, status and kind pushed down as server-side tags, every hit checked against the set.

Why `search` never raises for a failed backend call: one scope failing and all of them read
alike, so failed scopes land in `failed_scopes` with a redacted reason. What it must never do:
search as a principal outside the ScopeSet, let a hit leave that `ScopeSet.permits` refuses, or
search "all".
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

from adapters.base import Hit, SearchQuery, SearchResult, Status
from adapters.errors import BackendError, CorruptRecord, EmptyScopeError, InvalidRequest, UnsupportedFilter
from adapters.openviking.errors import OVNotFound
from adapters.openviking.mapping import Principal
from adapters.openviking.principals import OpenVikingPrincipalsBase, kind_tag, status_tag
from adapters.openviking.record import decode_record
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from adapters.shared.http import redact

#: The same logger as the rest of this backend, whichever concern logs.
log = logging.getLogger("adapters.openviking")


class OpenVikingSearch(OpenVikingPrincipalsBase):
    """search over a ScopeSet: one principal per entry, tags pushed down, hits re-checked."""

    # -- search -------------------------------------------------------------------------------
    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest("search needs a SearchQuery")
        if not isinstance(query.scopes, ScopeSet) or len(query.scopes) == 0:
            raise EmptyScopeError("search needs a non-empty ScopeSet", backend=self.name)
        unknown = set(query.filters) - self.capabilities.supported_filters
        if unknown:
            raise UnsupportedFilter(f"filters {sorted(unknown)} are not supported", backend=self.name)
        principals = [(entry, self.mapper.principal(entry.key)) for entry in query.scopes]  # InvalidRequest escapes
        outcomes = await asyncio.gather(*(self._search_entry(e, p, query) for e, p in principals), return_exceptions=True)
        hits: list[Hit] = []
        failed: list[ScopeKey] = []
        reasons: list[str] = []
        for (entry, _), outcome in zip(principals, outcomes):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome  # cancellation, interpreter exit: not a backend failure
                # Every failure of a scope's calls is a failed scope, never an exception (the
                # same contract as every adapter: the bridge raises RecallIncomplete with these).
                failed.append(entry.key)
                reasons.append(f"{entry.key}: {self._failure_reason(outcome)}")
                continue
            hits.extend(outcome)
        # second wall: every hit's scope must be in the set and permitted for that memory id
        hits = [h for h in hits if h.scope == h.memory.scope and query.scopes.permits(h.scope, h.memory.id)]
        hits.sort(key=lambda h: (-h.score, str(h.scope), h.memory.id))
        return SearchResult(hits=tuple(hits[: query.limit]), failed_scopes=tuple(failed), failure_reasons=tuple(reasons))

    def _failure_reason(self, exc: Exception) -> str:
        """`Type: message` of a failed scope, without secrets (the shared redaction)."""
        if isinstance(exc, BackendError):
            text = f"{type(exc).__name__}: {exc}"
        else:
            log.error("openviking search of one scope failed unexpectedly", exc_info=exc)
            text = f"{type(exc).__name__} (unexpected; see the adapter log)"
        return redact(text, [self._root.key.reveal()])[:500]

    async def _search_entry(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        auth = await self._auth(p, create=False)
        if auth is None:
            return []  # nothing was ever stored for this principal
        records, extracted = await asyncio.gather(self._search_records(entry, p, query), self._search_extracted(entry, p, query))
        hits = records + extracted
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        return hits[: query.limit]

    def _tag_plans(self, query: SearchQuery) -> list[list[str] | None]:
        """The server-side tag filters that together cover exactly (statuses x kinds).

        OpenViking 0.5.2 ANDs tags and keeps ONE value per key, so each (status, kind) pair is one
        `find`; the pairs are disjoint, so the union of each call's top-`limit` holds the top-`limit`.
        [None] = no tags (every status and kind wanted, or too many pairs: filter client-side)."""
        statuses = sorted(query.statuses, key=lambda st: st.value)
        kinds: list[str | None] = sorted(query.kinds) if query.kinds is not None else [None]
        if not self._tag_filtering or (len(statuses) == len(Status) and query.kinds is None):
            return [None]
        if len(statuses) * len(kinds) > self._max_tag_calls:
            return [None]
        plans: list[list[str] | None] = []
        for status, kind in itertools.product(statuses, kinds):
            plans.append([status_tag(status)] + ([kind_tag(kind)] if kind is not None else []))
        return plans

    async def _search_records(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        if entry.memory_ids is not None:
            ids = sorted(m for m in entry.memory_ids if isinstance(m, str) and p.memory_id_of(f"{p.memory_dir}/{m}.md"))
            if not ids:
                return []
            target: str | list[str] = [p.memory_uri(m) for m in ids]
        else:
            target = p.memory_dir
        plans = self._tag_plans(query)
        outcomes = await asyncio.gather(*(self._find_records(entry, p, query, target, tags) for tags in plans))
        return [h for hits in outcomes for h in hits]

    async def _find_records(self, entry: ScopeEntry, p: Principal, query: SearchQuery, target: str | list[str],
                            tags: list[str] | None) -> list[Hit]:
        # With tags the server filters before ranking: the first `limit` are what we want unless a
        # file fails its record check (tampered). Without tags, filter here and over-fetch.
        filtering = tags is None and (query.kinds is not None or query.statuses != frozenset(Status))
        fetch = max(query.limit, min(self._max_fetch, query.limit * self._overfetch if filtering else query.limit))
        while True:
            try:
                result = await self._call(p, False, lambda a: self._client.find(
                    a, query.text, target_uri=target, limit=fetch, level=2, read_content=True, tags=tags))
            except OVNotFound:
                return []
            raw = [r for r in (result or {}).get("memories", []) if isinstance(r, dict)]
            kept = await self._hits_from(raw, entry, p, query)
            if len(kept) >= query.limit or len(raw) < fetch or fetch >= self._max_fetch:
                return kept[: query.limit]
            fetch = min(self._max_fetch, fetch * 4)

    async def _hits_from(self, raw: list[dict[str, Any]], entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        out: list[Hit] = []
        now = query.at()
        for item in raw:
            if item.get("level") not in (2, None):
                continue  # directory summaries (levels 0/1)
            memory_id = p.memory_id_of(item.get("uri"))
            if memory_id is None:
                continue  # outside this scope's own directory: its scope cannot be established
            if entry.memory_ids is not None and memory_id not in entry.memory_ids:
                continue
            text = item.get("content")
            try:
                record = decode_record(text, expected_scope=p.scope, expected_id=memory_id) if isinstance(text, str) else None
            except CorruptRecord:
                record = None
            if record is None:  # content not inlined or truncated: read the file itself (alarms if it is corrupt)
                record = await self._read_quietly(p, memory_id)
                if record is None:
                    continue
            if record.status not in query.statuses or (query.kinds is not None and record.kind not in query.kinds):
                continue
            if record.expired(now):  # 0.5.2's find cannot express "expires_at > now" (see module docstring)
                continue
            score = item.get("score")
            score = min(1.0, max(0.0, float(score))) if isinstance(score, (int, float)) else 0.0
            out.append(Hit(memory=record, scope=p.scope, score=score))
        return out
