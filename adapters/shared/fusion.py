"""Reciprocal rank fusion of a vector and a lexical ranking, shared by the backends that have both.

Why shared: the local backend (FTS5 BM25) and PostgreSQL (tsvector) fuse the same way, so a
recall ranks alike on either. The two rankings come from ONE backend query bound to ONE
ScopeSet; fusion only re-orders them and never adds a candidate neither channel returned.
"""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

import numpy as np

__all__ = ["fuse", "RRF_K", "VECTOR_WEIGHT", "LEXICAL_WEIGHT"]

K = TypeVar("K", bound=Hashable)

#: weighted reciprocal rank fusion: VECTOR_WEIGHT / (RRF_K + vector rank) + LEXICAL_WEIGHT / (RRF_K + lexical rank), ranks from 1.
#: Tuned on benchmarks/recall_locomo.py seed 1 and benchmarks/recall_quality.py (the report uses
#: seed 2): with the default hybrid embedder, whose vectors already hold hashed words, BM25 helps
#: little and a strong lexical weight cost hit@5 on the hand-written set; a small k with a small
#: lexical weight lifts what both channels agree on without letting BM25 alone reorder the top.
RRF_K = 2
VECTOR_WEIGHT, LEXICAL_WEIGHT = 1.0, 0.15


def fuse(vector: Sequence[tuple[K, int, float]], lexical: Sequence[tuple[K, int, float]], limit: int,
         cosines: dict[int, float] | None = None) -> list[tuple[K, int, float]]:
    """Reciprocal rank fusion of the two rankings, top `limit`, as (scope, rowid, score). A
    rowid names one row across both rankings (it is unique in the caller's store or numbering).

    Every vector candidate stays a candidate, so the fusion never holds fewer hits than the vector
    channel alone. The score stays a similarity in [0, 1] that the ranking stage can floor and
    weigh: each hit gets its own cosine (`cosines` supplies those of lexical-only hits, 0 when
    unknown), raised where needed so scores never increase down the fused order — a hit the
    fusion puts first is never scored below one it puts after it."""
    # keyed by rowid alone: a rowid names one row, hence one scope, in both callers' rankings
    fused: dict[int, float] = {}
    cosine: dict[int, float] = {}
    scope_of: dict[int, K] = {}
    for rank, (scope, rowid, score) in enumerate(vector):
        fused[rowid] = VECTOR_WEIGHT / (RRF_K + rank + 1)
        cosine[rowid] = score
        scope_of[rowid] = scope
    extra = cosines or {}
    for rank, (scope, rowid, _) in enumerate(lexical):
        fused[rowid] = fused.get(rowid, 0.0) + LEXICAL_WEIGHT / (RRF_K + rank + 1)
        if rowid not in cosine:
            cosine[rowid] = extra.get(rowid, 0.0)
            scope_of[rowid] = scope
    order = sorted((-weight, -cosine[rowid], rowid) for rowid, weight in fused.items())[:limit]
    out: list[tuple[K, int, float]] = []
    floor = -np.inf
    for _, _, rowid in reversed(order):  # from the last: each score at least the one after it (+ a hair, no ties)
        floor = min(1.0, max(cosine[rowid], floor + 1e-6 if floor > -np.inf else cosine[rowid]))
        out.append((scope_of[rowid], rowid, floor))
    out.reverse()
    return out
