"""One pass over exactly the partitions of a ScopeSet: every readable row scored, every other masked.

Why a module of its own: both channels of a search (the vector scan and the lexical postings,
adapters/local/lexical_search.py) must read the same rows under the same filters, in the same
locked moment. The scan is that moment: it loads the ScopeSet's partitions, scores each row
against the query vector into one buffer and sets -inf on every row the search may not return
(status, kind, an entry's memory ids, expiry). A finite score therefore means "this row may be
returned", and the lexical channel uses exactly that mask.

What it must never do: read a partition outside the ScopeSet (an empty set is refused before any
scan), widen a ScopeEntry, or leave an expired or quarantined row unmasked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from adapters.base import Status, require_scope_set
from adapters.errors import InvalidRequest
from adapters.local.blas import one_blas_thread
from adapters.local.checks import valid_statuses
from adapters.local.partitions import Partition
from adapters.local.store import LocalStoreBase, allowed_status_codes
from adapters.scopes import ScopeKey, ScopeSet

__all__ = ["Scan", "LocalScan"]

_NO_ROWIDS = np.zeros(0, dtype=np.int64)
#: `Scan.best` sorts all the rows at or above its cut while they are at most this many times the
#: limit (one stable sort of a few hundred values costs less than the calls that pick the tie's
#: first rows); past it, a long tie is cut to its first rows before the sort
_WHOLE_TIE_SORTED = 6


@dataclass
class Scan:
    """The scored rows of one ScopeSet: `scores[offset : offset + n]` belongs to each segment's
    partition (positions 0..n-1), -inf where the row may not be returned."""

    scores: np.ndarray
    segments: list[tuple[ScopeKey, Partition, int, int]]  # (scope, partition, offset, n)
    rowids: np.ndarray  # the rowid of every scored row, in buffer order

    @property
    def size(self) -> int:
        return len(self.scores)

    def rows(self, indices: np.ndarray) -> list[tuple[ScopeKey, int]]:
        """(scope, rowid) of buffer indices; under the store's lock, before any partition changes."""
        return list(zip(*self._scopes_and_rowids(indices)))

    def _scopes_and_rowids(self, indices: np.ndarray) -> tuple[list[ScopeKey], list[int]]:
        """The scope and the rowid of each buffer index, as two lists (zipped by the callers in C)."""
        keys = [key for key, _, _, _ in self.segments]
        return [keys[w] for w in self.segment_numbers(indices)], self.rowids[indices].tolist()

    def segment_numbers(self, indices: np.ndarray) -> list[int]:
        """The segment (its place in `segments`) each buffer index lies in."""
        if len(self.segments) == 1:
            return [0] * len(indices)
        ends = np.array([offset + n for _, _, offset, n in self.segments])
        return ends.searchsorted(indices, side="right").tolist()

    @staticmethod
    def best(values: np.ndarray, limit: int, *, few_distinct: bool = False, floor: float = -np.inf) -> np.ndarray:
        """Buffer indices of the best `limit` values, best first; a value at or below `floor`
        (-inf unless told) is never returned and equal values keep buffer order, also at the cut
        (so a smaller limit gives a prefix of a larger one's order, and the same scan always ranks
        alike). Only the values at or above the cut are sorted.

        Two passes over `values`: the `limit`-th largest value (a partition, no index array),
        then the rows at or above it. If more rows than `limit` are, a tie straddles the cut and
        the first tied rows in buffer order are kept (by the stable sort of all of them, or, for
        a long tie, by picking them out before it); if that value is at or below `floor`, fewer
        than `limit` rows can be returned and all of them are. (Array methods, not numpy's module
        functions: on arrays of a few thousand rows their dispatch is a good part of the cost.)

        `few_distinct`: the values are a few distinct ones in long runs (BM25: a word most rows
        hold gives them the same few scores, the rest are -inf). numpy's partition slows down
        several times on such arrays, where its vectorised sort stays fast: the cut is read from
        a sorted copy instead. Same cut, same result; only the cost differs.

        `floor`: BM25 sums are 0 exactly where a row is no candidate (adapters/local/lexical_search.py);
        ranking them with `floor=0.0` spares the pass that would write -inf there first."""
        if limit <= 0:
            return np.zeros(0, dtype=np.intp)
        n = len(values)
        if n > limit:
            cut = (np.sort(values) if few_distinct else np.partition(values, n - limit))[n - limit]
            if cut > floor:
                top = (values >= cut).nonzero()[0]
                if len(top) > _WHOLE_TIE_SORTED * limit:  # a long tie at the cut: its first rows only, then sorted
                    kept = values[top]
                    above = top[kept > cut]
                    top = np.concatenate([above, top[kept == cut][: limit - len(above)]])
                    top.sort()
                # buffer order in, a stable sort by value: the rows above the cut (fewer than
                # `limit`), then the tied rows in buffer order, so the first `limit` are the ones
                # the long-tie path keeps, in the same order
                return top[(-values[top]).argsort(kind="stable")][:limit]
        candidates = (values > floor).nonzero()[0]  # at most `limit` of them
        return candidates[(-values[candidates]).argsort(kind="stable")][:limit]

    def top(self, values: np.ndarray, limit: int) -> list[tuple[ScopeKey, int, float]]:
        """The best `limit` rows by `values` (one per buffer row), best first: (scope, rowid, value)."""
        best = self.best(values, limit)
        return self.ranked(best, values[best].tolist())

    def ranked(self, indices: np.ndarray, scores: list[float]) -> list[tuple[ScopeKey, int, float]]:
        """(scope, rowid, score) of buffer indices, in their order, each with its score."""
        return list(zip(*self._scopes_and_rowids(indices), scores))


class LocalScan(LocalStoreBase):
    """The scan shared by `search_vector`, `search_lexical` and the fused `search`."""

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

    def _query_vector(self, vector: np.ndarray) -> np.ndarray:
        query = np.ascontiguousarray(vector, dtype=np.float32)
        if query.shape != (self.embedder.dimension,) or not np.isfinite(query).all():
            raise InvalidRequest(f"query vector must be {self.embedder.dimension} finite floats", backend=self.name)
        return query

    def _scan(self, scopes: ScopeSet, query: np.ndarray | None, *, statuses: frozenset[Status], kinds: frozenset[str] | None, now: float | None) -> Scan:
        """Score every row of the ScopeSet's partitions; the caller holds `self._lock` and maps
        the result to rows before releasing it (a swap-remove could otherwise move a row).

        Filters (status, kind, an entry's memory ids, expiry) are applied to each partition's
        scores before any top-k: excluded rows score -inf and are never returned, so `limit`
        permitted rows come back whenever that many exist. Partitions score straight into one
        buffer (no concatenation); the status filter is a cached 0/-inf bias per partition. With
        no `query` every row scores 0 before the masks: the rows alone, for the lexical channel."""
        require_scope_set(scopes)  # also a forged, empty one
        if not isinstance(statuses, frozenset) or not statuses or not all(isinstance(x, Status) for x in statuses):
            statuses = valid_statuses(statuses, allow_none=False)  # type: ignore[assignment]  # raises unless a usable collection
        allowed = allowed_status_codes(statuses)
        at = time.time() if now is None else float(now)
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
        scores = np.empty(total, dtype=np.float32)  # one buffer; each partition scores into its slice
        segments: list[tuple[ScopeKey, Partition, int, int]] = []
        offset = 0
        with one_blas_thread(total * self.embedder.dimension):  # a large scan: one BLAS thread (adapters/local/blas.py)
            for entry, part in parts:
                n = part.size
                if n == 0:
                    continue
                seg = scores[offset : offset + n]
                if query is None:
                    seg.fill(0.0)
                else:
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
                segments.append((entry.key, part, offset, n))
                offset += n
        scores = scores[:offset]  # a load that quarantined rows may have shrunk a partition after sizing
        if len(segments) == 1:
            rowids = segments[0][1].rowids[: segments[0][3]]
        else:
            rowids = np.concatenate([part.rowids[:n] for _, part, _, n in segments]) if segments else _NO_ROWIDS
        return Scan(scores, segments, rowids)
