"""Reciprocal rank fusion of a vector and a lexical ranking, shared by the backends that have both.

Why shared: the local backend (FTS5 BM25) and PostgreSQL (tsvector) fuse the same way, so a
recall ranks alike on either. The two rankings come from ONE backend query bound to ONE
ScopeSet; fusion only re-orders them and never adds a candidate neither channel returned.
"""

from __future__ import annotations

from itertools import chain
from typing import Hashable, Sequence, TypeVar

import numpy as np

__all__ = ["fuse", "fused_order", "RRF_K", "VECTOR_WEIGHT", "LEXICAL_WEIGHT"]

K = TypeVar("K", bound=Hashable)

#: weighted reciprocal rank fusion: VECTOR_WEIGHT / (RRF_K + vector rank) + LEXICAL_WEIGHT / (RRF_K + lexical rank), ranks from 1.
#: Tuned on benchmarks/recall_locomo.py seed 1 and benchmarks/recall_quality.py (the report uses
#: seed 2): with the default hybrid embedder, whose vectors already hold hashed words, BM25 helps
#: little and a strong lexical weight cost hit@5 on the hand-written set; a small k with a small
#: lexical weight lifts what both channels agree on without letting BM25 alone reorder the top.
RRF_K = 2
VECTOR_WEIGHT, LEXICAL_WEIGHT = 1.0, 0.15


def fused_order(ids: np.ndarray, cosines: np.ndarray, vector_count: int, limit: int) -> tuple[np.ndarray, list[float]]:
    """The fusion itself, over arrays. `ids` holds the vector ranking (its first `vector_count`
    entries, best first) followed by the lexical ranking (best first), each id at most once per
    ranking; `cosines` the similarity of each entry. Returns the positions in `ids` of the fused
    top `limit`, best first (for a row both channels found, its vector entry), and their scores.

    Order: fused weight, then similarity, then id, all descending but the id. Weights and sums
    are the same float operations, in the same order, as adding one channel's term to the other's
    would be, so the order does not depend on how the caller holds its rankings."""
    n = len(ids)
    ranks = np.arange(n, dtype=np.float64)
    ranks[vector_count:] -= vector_count
    weights = np.full(n, LEXICAL_WEIGHT)
    weights[:vector_count] = VECTOR_WEIGHT
    weights /= RRF_K + ranks + 1.0
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    total = np.bincount(inverse, weights=weights, minlength=len(unique))  # summed in input order: the vector term first
    cosine = np.asarray(cosines, dtype=np.float64)[first]
    order = np.lexsort((unique, -cosine, -total))[:limit]
    scores: list[float] = []
    floor = -np.inf
    for value in reversed(cosine[order].tolist()):  # from the last: each score at least the one after it (+ a hair, no ties)
        floor = min(1.0, max(value, floor + 1e-6 if floor > -np.inf else value))
        scores.append(floor)
    scores.reverse()
    return first[order], scores


def fuse(vector: Sequence[tuple[K, int, float]], lexical: Sequence[tuple[K, int, float]], limit: int,
         cosines: dict[int, float] | None = None) -> list[tuple[K, int, float]]:
    """Reciprocal rank fusion of the two rankings, top `limit`, as (scope, rowid, score). A
    rowid names one row across both rankings (it is unique in the caller's store or numbering).

    Every vector candidate stays a candidate, so the fusion never holds fewer hits than the vector
    channel alone. The score stays a similarity in [0, 1] that the ranking stage can floor and
    weigh: each hit gets its own cosine (`cosines` supplies those of lexical-only hits, 0 when
    unknown), raised where needed so scores never increase down the fused order — a hit the
    fusion puts first is never scored below one it puts after it. (`fused_order` is the fusion;
    this is its form for rankings held as tuples.)"""
    extra = cosines or {}
    entries = [*vector, *lexical]
    ids = np.fromiter((rowid for _, rowid, _ in entries), dtype=np.int64, count=len(entries))
    cosine = np.fromiter(chain((score for _, _, score in vector), (extra.get(rowid, 0.0) for _, rowid, _ in lexical)), dtype=np.float64, count=len(entries))
    picked, scores = fused_order(ids, cosine, len(vector), limit)
    return [(entries[at][0], entries[at][1], score) for at, score in zip(picked.tolist(), scores)]
