"""The lexical channel as a concern of the local backend: BM25 over the rows of one scan.

Why apart from lexical.py: that module is the persistent index (written with the rows, rebuilt
at upgrade); this one ranks by it, standing on the open store (lock, partitions). A search's
BM25 runs over the same `Scan` as its vector channel (adapters/local/scan.py): the same
partitions, the same rows masked, so a memory the vector channel may not return is never a
lexical candidate either, whatever its words. The words come from each partition's postings in
memory (adapters/local/postings.py), built from the index's stored terms.

Statistics (collection size, document frequency, average length) are those of the scan's
returnable rows alone, never table-wide: a table-wide statistic would let the order of one
user's hits depend on what other tenants wrote, a side channel.

What it must never do: read the postings of a partition outside the scan, or score a masked row.
"""

from __future__ import annotations

import numpy as np

from adapters.base import Status, require_scope_set
from adapters.local import kernels, lexical
from adapters.local.checks import valid_limit
from adapters.local.partitions import Partition
from adapters.local.postings import Postings
from adapters.local.scan import LocalScan, Scan
from adapters.local.store import guarded
from adapters.scopes import ScopeKey, ScopeSet

__all__ = ["LocalLexical"]

#: a partition's postings are kept in at most this many pieces (rows appended since the last
#: build are one piece each); past it they are merged into one
POSTING_PIECES_MAX = 4


class LocalLexical(LocalScan):
    """BM25 over a scan's rows (search.py fuses it with the vector ranking of the same scan)."""

    #: False: `search` is the vector channel alone (benchmarks compare the two)
    lexical_channel: bool = True

    @guarded
    def search_lexical(self, scopes: ScopeSet, text: str, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}),
                       kinds: frozenset[str] | None = None, now: float | None = None) -> list[tuple[ScopeKey, int, float]]:
        """BM25 top-`limit` over exactly the ScopeSet: (scope, rowid, bm25), best first."""
        require_scope_set(scopes)
        valid_limit(limit)
        with self._lock:
            scan = self._scan(scopes, None, statuses=statuses, kinds=kinds, now=now)
            bm25 = self._bm25(scan, text)
            return scan.top(bm25, limit) if bm25 is not None else []

    def _bm25(self, scan: Scan, text: str) -> np.ndarray | None:
        """The BM25 score of every row of the scan's buffer for `text`, -inf for a row that holds
        no query word or may not be returned; None when no row can score. Caller holds the lock."""
        sums = self._bm25_sums(scan, text)
        if sums is not None:
            sums[sums <= 0.0] = -np.inf  # a row holding no query word (or masked) is no candidate
        return sums

    def _bm25_sums(self, scan: Scan, text: str) -> np.ndarray | None:
        """`_bm25` with 0 where it has -inf: every candidate sums to more than 0 (each of its
        words weighs idf > 0; a masked row's postings weigh 0), so `Scan.best(..., floor=0.0)`
        ranks these sums exactly as `Scan.best` ranks `_bm25`'s scores, without the pass over
        the whole buffer that writes -inf (the fused search ranks them so). Caller holds the lock.

        Computed by the compiled kernel (adapters/local/kernels.py) where the install built it,
        else by `_bm25_sums_numpy`: the same arithmetic, to the bit
        (tests/local/test_bm25_reference.py runs both against the plain formula)."""
        probes = lexical.query_probes(text)
        terms = len(probes) // 2
        returnable = np.isfinite(scan.scores)
        n_docs = int(np.count_nonzero(returnable))
        if not terms or n_docs == 0:
            return None
        lengths = np.empty(scan.size, dtype=np.float32)
        # each partition's postings pieces with its place in the scan's buffer
        segments = [(self._postings(key, part), offset, n) for key, part, offset, n in scan.segments]
        compiled = kernels.compiled
        if compiled is None:
            return _bm25_sums_numpy(segments, probes, returnable, n_docs, lengths)
        held_by = np.zeros(terms, dtype=np.float64)
        sums = np.zeros(scan.size, dtype=np.float64)

        def weigh(total: float) -> tuple[np.ndarray, float]:  # called by the kernel once it has counted
            return _weights(held_by, n_docs, _returnable_length(lengths, returnable, exact=total))

        scored = compiled.sums(segments, probes, returnable, lengths, held_by, sums, weigh, lexical.K1, lexical.B)
        return sums if scored else None

    def _postings(self, key: ScopeKey, part: Partition) -> list[Postings]:
        """The partition's postings covering exactly its rows: built at the first lexical search
        of the partition, then extended by the rows appended since (a removal drops them, a
        reload replaces the partition: adapters/local/partitions.py)."""
        pieces = part.lexical
        covered = pieces[-1].end if pieces else 0
        if covered > part.size:  # never expected (a removal drops them): rebuild rather than guess
            pieces, covered = [], 0
        if covered < part.size:
            pieces = [*pieces, self._read_postings(key, part, covered, part.size)]
            if len(pieces) > POSTING_PIECES_MAX:
                pieces = [Postings.merged(pieces)]
            part.lexical = pieces
        return pieces

    def _read_postings(self, key: ScopeKey, part: Partition, start: int, end: int) -> Postings:
        """Postings of the partition's positions [start, end), from the index's stored terms."""
        tag = lexical.scope_tag(self._db, str(key))
        rowids = part.rowids[start:end].tolist()
        if tag is None:  # nothing of this scope was ever indexed
            return Postings.build(start, end, 0, [])
        position_of = {rowid: start + i for i, rowid in enumerate(rowids)}
        rows: list[tuple[int, str]] = []
        for first in range(0, len(rowids), 500):
            chunk = rowids[first : first + 500]
            fetched, _ = self._fetchall(f"SELECT rowid, terms FROM memories_lexical WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)
            rows += [(position_of[rowid], terms) for rowid, terms in fetched if rowid in position_of]
        return Postings.build(start, end, tag, rows)


def _bm25_sums_numpy(segments: list[tuple[list[Postings], int, int]], probes: np.ndarray, returnable: np.ndarray, n_docs: int,
                     lengths: np.ndarray) -> np.ndarray | None:
    """`LocalLexical._bm25_sums` in numpy: where the kernel was not built, and the reference it is
    held to. Takes what the kernel takes and fills `lengths` (the rows' term counts) as it does.

    Its cost is a fixed number of array operations per search plus one binary search per
    postings piece, whatever the words: each array is built once over every posting found
    (no filtering copies: a masked row's postings are weighed 0, so it stays at 0 like a row
    without the words, and are left out of the document frequencies), and numpy's methods
    are called rather than its module functions, whose dispatch costs more than the work on
    arrays this small. The arithmetic is the plain formula's, operation for operation
    (tests/local/test_bm25_reference.py compares every score to the bit)."""
    terms = len(probes) // 2
    # every posting found, as slices of the pieces (views, no copy) and per slice its term
    # number and the buffer offset of its partition: one concatenation at the end
    found_positions: list[np.ndarray] = []
    found_counts: list[np.ndarray] = []
    slice_terms: list[int] = []
    slice_offsets: list[int] = []
    slice_sizes: list[int] = []
    for pieces, offset, n in segments:
        if len(pieces) == 1:
            lengths[offset : offset + n] = pieces[0].lengths
        else:
            np.concatenate([p.lengths for p in pieces], out=lengths[offset : offset + n])
        for piece in pieces:
            bounds = piece.digests.searchsorted(probes).tolist()  # each term's first posting, then the next term's
            for term in range(terms):
                lo, hi = bounds[term], bounds[terms + term]
                if hi > lo:
                    found_positions.append(piece.positions[lo:hi])
                    found_counts.append(piece.counts[lo:hi])
                    slice_terms.append(term)
                    slice_offsets.append(offset)
                    slice_sizes.append(hi - lo)
    if not found_positions:
        return None
    # each posting's partition offset and term number: both repeated by one call
    offset_of, term_of = np.array([slice_offsets, slice_terms], dtype=np.intp).repeat(slice_sizes, axis=1)
    rows = np.concatenate(found_positions) + offset_of
    keep = returnable[rows]
    held_by = np.bincount(term_of, weights=keep, minlength=terms)  # document frequency per term, returnable rows only
    if not np.count_nonzero(held_by):  # no returnable row holds a query word
        return None
    idf, avg_length = _weights(held_by, n_docs, _returnable_length(lengths, returnable))
    norm = lengths[rows]  # float32, in place: K1 * (1 - B + B * length / avg_length)
    norm *= lexical.B
    norm /= avg_length
    norm += 1.0 - lexical.B
    norm *= lexical.K1
    counts = np.concatenate(found_counts, dtype=np.float64)
    weights = idf[term_of]  # in place: idf * count * (K1 + 1) / (count + norm), in that order
    weights *= counts
    weights *= lexical.K1 + 1.0
    counts += norm
    weights /= counts
    weights *= keep  # a masked row's postings add nothing: it stays at 0, below
    return np.bincount(rows, weights=weights, minlength=len(returnable))


def _weights(held_by: np.ndarray, n_docs: int, total_length: float) -> tuple[np.ndarray, float]:
    """Each query term's inverse document frequency and the returnable rows' mean length, from
    the document frequencies `held_by` (float64, returnable rows only, one at least not 0) and the
    returnable rows' summed length. In numpy on both paths: numpy's log1p may be vector code that
    the C library's does not match to the bit."""
    half = held_by + 0.5
    idf = np.log1p((n_docs + 1.0 - half) / half)  # (n - df + 0.5) / (df + 0.5): every term exact, one rounding
    return idf, float(np.float32(total_length / n_docs)) or 1.0


#: float32 holds every integer up to here exactly
_EXACT_FLOAT32 = float(2**24)


def _returnable_length(lengths: np.ndarray, returnable: np.ndarray, *, exact: float | None = None) -> float:
    """The summed length of the returnable rows, as `lengths[returnable].sum()` gives it (a float32
    sum: the mean length is ndarray.mean's arithmetic, that sum over the count, as float32).

    Lengths are word counts, whole numbers: while a total stays below 2**24 every partial sum is
    a whole number float32 holds exactly, so any order of adding gives the same, exact total, and
    one dot product (no copy of the returnable lengths) gives it, or the kernel's `exact` sum in
    float64. A total of 2**24 or more may have rounded in float32: the float32 sum decides then."""
    total = float(lengths.dot(returnable)) if exact is None else exact
    return total if total < _EXACT_FLOAT32 else float(lengths[returnable].sum())
