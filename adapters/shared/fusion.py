"""Reciprocal rank fusion of a vector and a lexical ranking, shared by the backends that have both.

Why shared: the local backend (FTS5 BM25) and PostgreSQL (tsvector) fuse the same way, so a
recall ranks alike on either. The two rankings come from ONE backend query bound to ONE
ScopeSet; fusion only re-orders them and never adds a candidate neither channel returned.
"""

from __future__ import annotations

from itertools import chain
from typing import Hashable, Sequence, TypeVar

import numpy as np

__all__ = ["fuse", "fused_order", "fused_rows", "RRF_K", "VECTOR_WEIGHT", "LEXICAL_WEIGHT"]

K = TypeVar("K", bound=Hashable)

#: weighted reciprocal rank fusion: VECTOR_WEIGHT / (RRF_K + vector rank) + LEXICAL_WEIGHT / (RRF_K + lexical rank), ranks from 1.
#: Tuned on benchmarks/recall_locomo.py seed 1 and benchmarks/recall_quality.py (the report uses
#: seed 2): with the default hybrid embedder, whose vectors already hold hashed words, BM25 helps
#: little and a strong lexical weight cost hit@5 on the hand-written set; a small k with a small
#: lexical weight lifts what both channels agree on without letting BM25 alone reorder the top.
RRF_K = 2
VECTOR_WEIGHT, LEXICAL_WEIGHT = 1.0, 0.15


#: ranks whose fusion terms are computed once, at import (a longer ranking computes the rest per call)
_RANKS_KEPT = 1024
_TERMS = {w: [w / (RRF_K + rank + 1.0) for rank in range(_RANKS_KEPT)] for w in (VECTOR_WEIGHT, LEXICAL_WEIGHT)}


#: the same tables as arrays, negated (read them, never change them)
_NEGATED_TERM_ARRAYS = {w: -np.asarray(terms, dtype=np.float64) for w, terms in _TERMS.items()}


def _rank_terms(weight: float, count: int) -> list[float]:
    """`weight / (RRF_K + rank + 1)` for ranks 0 .. count - 1 at least (the table computed at import: read it, never change it)."""
    if count <= _RANKS_KEPT:
        return _TERMS[weight]
    return [weight / (RRF_K + rank + 1.0) for rank in range(count)]


def _negated_rank_term_array(weight: float, count: int) -> np.ndarray:
    """`_rank_terms` negated, as an array of exactly `count` entries (the same floats, minus)."""
    if count <= _RANKS_KEPT:
        return _NEGATED_TERM_ARRAYS[weight][:count]
    return -np.asarray(_rank_terms(weight, count), dtype=np.float64)


def fused_order(ids: np.ndarray, cosines: np.ndarray, vector_count: int, limit: int) -> tuple[np.ndarray, list[float]]:
    """The fusion itself, over arrays. `ids` holds the vector ranking (its first `vector_count`
    entries, best first) followed by the lexical ranking (best first), each id at most once per
    ranking; `cosines` the similarity of each entry. Returns the positions in `ids` of the fused
    top `limit`, best first (for a row both channels found, its vector entry), and their scores.

    Order: fused weight, then similarity, then id, all descending but the id. A row's weight is
    its terms summed in input order (the vector term first), as adding one channel's term to the
    other's would, so the order does not depend on how the caller holds its rankings. The rows
    are matched in a dict: the rankings are a few dozen ids each, where `np.unique`'s sort and
    its bookkeeping cost several times more."""
    listed = ids.tolist()
    vector_terms = _rank_terms(VECTOR_WEIGHT, vector_count)
    lexical_terms = _rank_terms(LEXICAL_WEIGHT, len(listed) - vector_count)
    slot_of = dict(zip(listed[:vector_count], range(vector_count)))  # id -> its slot in `first` / `total`
    first = list(range(vector_count))  # the position of each distinct id's first entry
    total = vector_terms[:vector_count]
    if len(slot_of) != vector_count:  # an id twice in the vector ranking: every entry one by one
        slot_of, first, total = {}, [], []
        lexical_terms = [*vector_terms[:vector_count], *lexical_terms]
        vector_count = 0
    for rank, rowid in enumerate(listed[vector_count:]):
        slot = slot_of.get(rowid)
        if slot is None:
            slot_of[rowid] = len(first)
            first.append(vector_count + rank)
            total.append(lexical_terms[rank])
        else:
            total[slot] += lexical_terms[rank]
    positions = np.asarray(first, dtype=np.intp)
    cosine = np.asarray(cosines, dtype=np.float64)[positions]
    order = np.lexsort((ids[positions], -cosine, -np.asarray(total, dtype=np.float64)))[:limit]
    return positions[order], _non_increasing(cosine[order].tolist())


def fused_rows(vector: np.ndarray, lexical: np.ndarray, ids: np.ndarray, cosines: np.ndarray, limit: int) -> tuple[np.ndarray, list[float]]:
    """`fused_order` for two rankings of distinct rows, each row named by one index into `ids`
    and `cosines` (a scan's buffer rows: the local search): `vector` and `lexical` are those
    indices, best first, neither naming a row twice, and `ids` names every row once. Returns the
    indices of the fused top `limit`, best first, and their scores: exactly `fused_order`'s
    choice, order and scores for `ids[vector]` followed by `ids[lexical]`.

    Why a second form: with distinct rows known up front, a row both channels found is matched
    through a scratch array over the rows (each row's lexical term) instead of a dict filled id
    by id in Python, and no entry is compressed away: a shared row's lexical entry weighs 0, so
    it sorts after every real entry (all weigh more than 0) and the cut leaves it out. The sums
    are `fused_order`'s (a vector term plus 0.0 or the row's lexical term, one float addition),
    kept negated (negation is exact, and so is a sum of negated terms), as are the sort keys."""
    vector_count, lexical_count = len(vector), len(lexical)
    both = np.concatenate([vector, lexical])
    # minus each row's lexical term, 0 for a row the lexical ranking lacks: a scratch the size of
    # the scan, as BM25's sums and the lexical cut's sorted copy already are
    lexical_term = np.zeros(len(ids))
    lexical_term[lexical] = _negated_rank_term_array(LEXICAL_WEIGHT, lexical_count)
    vector_total = _negated_rank_term_array(VECTOR_WEIGHT, vector_count) + lexical_term[vector]
    lexical_term[vector] = 0.0  # a row the vector ranking holds: its lexical entry weighs 0
    total = np.concatenate([vector_total, lexical_term[lexical]])
    entries = min(limit, np.count_nonzero(total))  # the real ones: every row once
    order = np.lexsort((ids[both], np.negative(cosines[both], dtype=np.float64), total))[:entries]
    picked = both[order]
    return picked, _non_increasing(cosines[picked].tolist())


def _non_increasing(cosines: list[float]) -> list[float]:
    """Each fused hit's score: its own cosine, raised to a hair (1e-6) above the score of the hit
    after it where needed, so scores never increase down the fused order; at most 1.0. (The last
    hit has no hit after it: a floor of -inf raises nothing, as -inf + 1e-6 is -inf.)"""
    scores: list[float] = []
    floor = -np.inf
    for value in reversed(cosines):
        raised = floor + 1e-6
        if raised > value:
            value = raised
        floor = value if value < 1.0 else 1.0
        scores.append(floor)
    scores.reverse()
    return scores


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
