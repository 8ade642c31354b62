"""Vector search of the local backend: exactly the partitions of the ScopeSet it is given.

Why here and not in the bridge: the ScopeSet (and any exact memory-id restriction a share
produced) is enforced inside the scan itself, never as a filter after it, so a memory outside
the set is never scored, ranked or returned. What it must never do: search "all" (an empty set
is refused upstream and never reaches a scan), widen a ScopeEntry, or return an expired or
quarantined row.
"""

from __future__ import annotations

import time
from typing import Iterable

import numpy as np

from adapters.base import Hit, SearchQuery, SearchResult, Status, StoredMemory, require_scope_set
from adapters.errors import InvalidRequest, UnsupportedFilter
from adapters.local.blas import one_blas_thread
from adapters.local.checks import valid_limit, valid_statuses
from adapters.local.lexical import FUSION_DEPTH
from adapters.local.lexical_search import LocalLexical
from adapters.local.records import COLUMNS as _COLUMNS, RowDamage, encodable, row_to_memory
from adapters.local.store import LocalStoreBase, allowed_status_codes, guarded
from adapters.scopes import ScopeKey, ScopeSet


_NO_ROWIDS = np.zeros(0, dtype=np.int64)


class LocalSearch(LocalLexical):
    """search / search_vector / load_hits over the ScopeSet's partitions only (search: fused with
    the lexical channel, `LocalLexical`)."""

    # -- reads --------------------------------------------------------------------------
    def _rowids_for(self, scope: ScopeKey, memory_ids: Iterable[str]) -> np.ndarray:
        ids = [i for i in memory_ids if isinstance(i, str)]
        found: list[int] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found += [r[0] for r in self._db.execute(f"SELECT rowid FROM memories WHERE scope = ? AND id IN ({marks})", (str(scope), *chunk))]
        return np.asarray(found, dtype=np.int64)

    def _expired_rowids(self, scope: ScopeKey, now: float) -> np.ndarray:
        """Rows of `scope` whose `expires_at` has passed: one query on the partial index
        `memories_expiring` (only rows that expire are in it; the purge keeps it small)."""
        rows = self._db.execute("SELECT rowid FROM memories WHERE scope = ? AND expires_at IS NOT NULL AND expires_at <= ?", (str(scope), now)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    @guarded
    def search_vector(self, scopes: ScopeSet, vector: np.ndarray, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}), kinds: frozenset[str] | None = None, now: float | None = None) -> list[tuple[ScopeKey, int, float]]:
        """Exact top-`limit` over exactly the partitions of `scopes`: (scope, rowid, score).

        Filters (status, kind, an entry's memory ids) are applied to each partition's scores
        before the top-k: excluded rows score -inf and are never returned, so `limit` permitted
        rows come back whenever that many exist. Partitions score straight into one buffer (no
        concatenation); the status filter is a cached 0/-inf bias per partition; the
        (scope, rowid) mapping happens under the lock, before any concurrent swap-remove.
        """
        require_scope_set(scopes)  # also a forged, empty one
        valid_limit(limit)
        if not isinstance(statuses, frozenset) or not statuses or not all(isinstance(x, Status) for x in statuses):
            statuses = valid_statuses(statuses, allow_none=False)  # type: ignore[assignment]  # raises unless a usable collection
        allowed = allowed_status_codes(statuses)
        at = time.time() if now is None else float(now)
        query = np.ascontiguousarray(vector, dtype=np.float32)
        if query.shape != (self.embedder.dimension,) or not np.isfinite(query).all():
            raise InvalidRequest(f"query vector must be {self.embedder.dimension} finite floats", backend=self.name)
        with self._lock:
            self._refresh_if_changed_elsewhere()
            parts = [(entry, self._partition(entry.key)) for entry in scopes]
            kind_lut = None
            if kinds is not None:  # after loading: a partition load may assign new kind codes
                kind_lut = np.zeros(len(self._kind_codes) + 1, dtype=bool)
                for k in kinds:
                    code = self._kind_codes.get(k)
                    if code is not None:
                        kind_lut[code] = True
            total = sum(part.size for _, part in parts)
            if total == 0:
                return []
            # one score buffer for the whole ScopeSet; each partition scores straight into its slice
            scores = np.empty(total, dtype=np.float32)
            segments: list[tuple[ScopeKey, np.ndarray]] = []
            ends: list[int] = []
            with one_blas_thread(total * self.embedder.dimension):  # a large scan: one BLAS thread (adapters/local/blas.py)
                offset = 0
                for entry, part in parts:
                    n = part.size
                    if n == 0:
                        continue
                    seg = scores[offset : offset + n]
                    part.scores_into(query, seg)
                    bias = part.status_bias(allowed)
                    if bias is not None:
                        seg += bias
                    mask = None
                    if kind_lut is not None:
                        mask = kind_lut[part.kind[:n]]
                    if entry.memory_ids is not None:
                        imask = np.isin(part.rowids[:n], self._rowids_for(entry.key, entry.memory_ids))
                        mask = imask if mask is None else mask & imask
                    # the expiry query only when a row of this partition may have expired by `at`
                    expired = self._expired_rowids(entry.key, at) if at >= part.next_expiry else _NO_ROWIDS
                    if expired.size:  # expired rows are never candidates: excluded before the top-k
                        emask = ~np.isin(part.rowids[:n], expired)
                        mask = emask if mask is None else mask & emask
                    if mask is not None:
                        seg[~mask] = -np.inf
                    segments.append((entry.key, part.rowids[:n]))
                    offset += n
                    ends.append(offset)
            total = offset  # a load that quarantined rows may have shrunk a partition after sizing
            scores = scores[:total]
            if total == 0:
                return []
            k = min(limit, total)
            top = np.argpartition(scores, total - k)[total - k :] if k < total else np.arange(total)
            values = scores[top]
            order = np.argsort(-values, kind="stable")
            top, values = top[order], values[order]
            keep = values > -np.inf  # a filtered-out row is never returned
            if not keep.all():
                top, values = top[keep], values[keep]
            all_rowids = np.concatenate([r for _, r in segments]) if len(segments) > 1 else segments[0][1]
            which = np.searchsorted(np.asarray(ends), top, side="right").tolist()
            return [(segments[w][0], rowid, score) for w, rowid, score in zip(which, all_rowids[top].tolist(), values.tolist())]

    def _load_hits(self, ranked: list[tuple[ScopeKey, int, float]]) -> tuple[list[Hit], int]:
        """The hits of `ranked` (scan order kept): rows decoded before come from their
        partition's decoded rows, the rest from one SELECT. Only a row of the partition that is
        current for its scope, in this process, after the cross-process check, is served from
        memory, and every write transaction drops the decoded rows of the scopes it touches, so
        a forgotten, edited, deleted or moved memory is always read again. A cached record is
        shared by the hits of later recalls: records are frozen; treat their metadata as read-only."""
        if not ranked:
            return [], 0
        found: dict[int, StoredMemory] = {}
        missing: list[int] = []
        with self._lock:
            self._refresh_if_changed_elsewhere()
            parts = self._partitions
            for key, rowid, _ in ranked:
                part = parts.get(key)
                memory = part.decoded.get(rowid) if part is not None else None
                if memory is None:
                    missing.append(rowid)
                else:
                    found[rowid] = memory
            damaged: list[tuple[int, str, str, str]] = []
            if missing:
                marks = ",".join("?" * len(missing))
                fetched, lenient = self._fetchall(f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({marks})", missing)
                rows = {r[0]: r for r in fetched}
                key_text = {key: str(key) for key in {r[0] for r in ranked}}
                for key, rowid, _ in ranked:
                    row = rows.get(rowid)
                    if row is None or rowid in found:  # deleted between scan and load: never resurrect it
                        continue
                    if row[2] != key_text[key]:  # the row's stored scope is the only truth; mismatch -> drop
                        continue
                    try:  # str(ScopeKey) is injective, so the verified key IS the row's scope: no re-parse
                        memory = row_to_memory(row, key, check_text=lenient)
                    except RowDamage as damage:
                        damaged.append((rowid, row[2], row[1], damage.reason))
                        continue
                    found[rowid] = memory
                    part = parts.get(key)
                    if part is not None and not lenient:
                        self._keep_decoded(key_text[key], part, rowid, memory)
        hits = []
        for key, rowid, score in ranked:
            memory = found.get(rowid)
            if memory is not None:
                hits.append(Hit(memory, key, 0.0 if score < 0.0 else 1.0 if score > 1.0 else score))
        if damaged:
            with self._lock:
                self._quarantine(damaged)
        return hits, len(damaged)

    @guarded
    def load_hits(self, ranked: list[tuple[ScopeKey, int, float]]) -> list[Hit]:
        return self._load_hits(ranked)[0]

    @guarded
    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest(f"search expects a SearchQuery, got {type(query).__name__}", backend=self.name)
        if query.filters:
            unknown = ", ".join(sorted(map(str, query.filters)))
            raise UnsupportedFilter(f"the local backend supports no extra filters (got: {unknown})", backend=self.name)
        if not isinstance(query.text, str):
            raise InvalidRequest("query text must be a string", backend=self.name)
        (vector,) = await self._embed([encodable(query.text, "query text")])
        for _ in range(3):  # a row quarantined while loading hits is out of the partitions: rank again
            depth = max(query.limit, FUSION_DEPTH)  # each channel's candidates; the fusion keeps query.limit
            ranked = self.search_vector(query.scopes, vector, limit=depth, statuses=query.statuses, kinds=query.kinds, now=query.at())
            ranked = self.fused_with_lexical(ranked, query, vector)  # adapters/local/lexical_search.py: same ScopeSet
            hits, damaged = self._load_hits(ranked)
            if not damaged:
                break
        return SearchResult(hits=tuple(hits))
