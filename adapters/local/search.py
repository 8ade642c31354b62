"""Search of the local backend: exactly the partitions of the ScopeSet it is given.

Why here and not in the bridge: the ScopeSet (and any exact memory-id restriction a share
produced) is enforced inside the scan itself (adapters/local/scan.py), never as a filter after
it, so a memory outside the set is never scored, ranked or returned, by its vector or by its
words. `search` ranks one scan twice (vectors, BM25) and fuses the two rankings
(adapters/shared/fusion.py); `load_hits` turns ranked rows into records. What it must never do:
search "all" (an empty set is refused upstream and never reaches a scan), widen a ScopeEntry,
or return an expired or quarantined row.
"""

from __future__ import annotations

import numpy as np

from adapters.base import Hit, SearchQuery, SearchResult, Status, StoredMemory, require_scope_set
from adapters.errors import InvalidRequest, UnsupportedFilter
from adapters.local import kernels
from adapters.local.checks import valid_limit
from adapters.local.lexical import FUSION_DEPTH
from adapters.local.lexical_search import LocalLexical
from adapters.local.records import COLUMNS as _COLUMNS, RowDamage, encodable, row_to_memory
from adapters.local.scan import Scan
from adapters.local.store import guarded
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.fusion import LEXICAL_WEIGHT, RRF_K, VECTOR_WEIGHT, fused_rows


def _fused_rows(vector: np.ndarray, lexical: np.ndarray, ids: np.ndarray, cosines: np.ndarray, limit: int) -> tuple[np.ndarray, list[float]]:
    """`fused_rows` (adapters/shared/fusion.py), by the compiled kernel where the install built it
    (adapters/local/kernels.py): the same rows in the same order with the same scores, without
    the dozen array operations numpy needs for a hundred entries
    (tests/local/test_fusion_kernel.py holds the kernel to `fused_rows`)."""
    compiled = kernels.compiled
    if compiled is None:
        return fused_rows(vector, lexical, ids, cosines, limit)
    picked = np.empty(len(vector) + len(lexical), dtype=np.intp)
    count, scores = compiled.fuse(vector, lexical, ids, cosines, limit, picked, float(RRF_K), VECTOR_WEIGHT, LEXICAL_WEIGHT)
    return picked[:count], scores


class LocalSearch(LocalLexical):
    """search / search_vector / load_hits over the ScopeSet's partitions only (search: the
    vector ranking fused with the lexical one of the same scan, `LocalLexical`)."""

    # -- reads --------------------------------------------------------------------------
    @guarded
    def search_vector(self, scopes: ScopeSet, vector: np.ndarray, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}), kinds: frozenset[str] | None = None, now: float | None = None) -> list[tuple[ScopeKey, int, float]]:
        """Exact top-`limit` over exactly the partitions of `scopes`: (scope, rowid, score).

        Filters apply before the top-k (adapters/local/scan.py), so `limit` permitted rows come
        back whenever that many exist; the (scope, rowid) mapping happens under the lock,
        before any concurrent swap-remove."""
        require_scope_set(scopes)  # also a forged, empty one
        valid_limit(limit)
        query = self._query_vector(vector)
        with self._lock:
            scan = self._scan(scopes, query, statuses=statuses, kinds=kinds, now=now)
            return scan.top(scan.scores, limit)

    def _load_hits(self, ranked: list[tuple[ScopeKey, int, float]], *, checked: bool = False) -> tuple[list[Hit], int]:
        """The hits of `ranked` (scan order kept): rows decoded before come from their
        partition's decoded rows, the rest from one SELECT. Only a row of the partition that is
        current for its scope, in this process, after the cross-process check, is served from
        memory, and every write transaction drops the decoded rows of the scopes it touches, so
        a forgotten, edited, deleted or moved memory is always read again. A cached record is
        shared by the hits of later recalls: records are frozen; treat their metadata as read-only.

        `checked`: the caller holds the lock since its own cross-process check (the scan that
        ranked these rows), so nothing can have changed in between and the check is not repeated."""
        if not ranked:
            return [], 0
        found: dict[int, StoredMemory] = {}
        missing: list[int] = []
        with self._lock:
            if not checked:
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
                        part.decoded[rowid] = memory
        hits = []
        for key, rowid, score in ranked:
            memory = found.get(rowid)
            if memory is not None:
                hits.append(Hit(memory, key, 0.0 if score < 0.0 else 1.0 if score > 1.0 else score))
        if damaged:
            with self._lock:
                self._quarantine(damaged)
        return hits, len(damaged)

    def _fused(self, scan: Scan, text: str, depth: int, limit: int) -> list[tuple[ScopeKey, int, float]]:
        """The top `limit` rows of the scan as (scope, rowid, score): `_fused_rows_of`'s rows."""
        return scan.ranked(*self._fused_rows_of(scan, text, depth, limit))

    def _fused_rows_of(self, scan: Scan, text: str, depth: int, limit: int) -> tuple[np.ndarray, list[float]]:
        """The buffer rows of the scan's top `limit` and their scores: each channel's best `depth`
        rows fused (adapters/shared/fusion.py); the vector channel alone when the lexical one has
        no candidate or is off. Caller holds the lock."""
        vector = scan.best(scan.scores, depth)
        bm25 = self._bm25_sums(scan, text) if self.lexical_channel else None  # 0 where `_bm25` has -inf
        lexical = scan.best(bm25, depth, few_distinct=True, floor=0.0) if bm25 is not None else None
        if lexical is None or not len(lexical):
            vector = vector[:limit]  # `best` ranks a prefix of a longer ranking the same
            return vector, scan.scores[vector].tolist()
        return _fused_rows(vector, lexical, scan.rowids, scan.scores, limit)  # buffer rows: each ranking's are distinct

    @staticmethod
    def _decoded_hits(scan: Scan, rows: np.ndarray, scores: list[float]) -> list[Hit] | None:
        """The hits of the scan's buffer `rows`, in order, from their partitions' decoded records;
        None as soon as one is not decoded (`_load_hits` then reads the rows). The scan's
        partitions are the current ones for their scopes: the caller holds the lock since the
        scan's cross-process check, as `_load_hits(checked=True)` requires, so this serves exactly
        what `_load_hits` would serve from memory, without the (scope, rowid, score) tuples and
        the two passes over them."""
        segments = scan.segments
        hits: list[Hit] = []
        add = hits.append
        for at, rowid, score in zip(scan.segment_numbers(rows), scan.rowids[rows].tolist(), scores):
            key, part, _, _ = segments[at]
            memory = part.decoded.get(rowid)
            if memory is None:
                return None
            add(Hit(memory, key, 0.0 if score < 0.0 else 1.0 if score > 1.0 else score))
        return hits

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
        (vector,) = await self._embed([encodable(query.text, "query text")])  # checked there: shape, finite
        depth = max(query.limit, FUSION_DEPTH)  # each channel's candidates; the fusion keeps query.limit
        for _ in range(3):  # a row quarantined while loading hits is out of the partitions: rank again
            with self._lock:  # both channels read one scan, and the hits are loaded in the same locked moment
                scan = self._scan(query.scopes, vector, statuses=query.statuses, kinds=query.kinds, now=query.at())
                rows, scores = self._fused_rows_of(scan, query.text, depth, query.limit)
                hits, damaged = self._decoded_hits(scan, rows, scores), 0
                if hits is None:  # a row not decoded yet: read from the table (and checked there)
                    hits, damaged = self._load_hits(scan.ranked(rows, scores), checked=True)
            if not damaged:
                break
        return SearchResult(hits=tuple(hits))
