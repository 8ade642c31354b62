"""The fusion over arrays (`fused_order`, what the local search runs on its scan's rows) against
the fusion it replaced, written the plain way: a dict of summed weights and a sorted list.

Both channels' rankings here share rows, tie on weights and on similarities (few distinct
values), and come in every length around the limit, so order, scope and score of every fused
row are compared where a difference in float arithmetic or tie-breaking would show. Then the
local backend's own search, channel by channel, against the tuple form of the same fusion.
"""

from __future__ import annotations

import numpy as np
import pytest

from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder
from adapters.shared.fusion import LEXICAL_WEIGHT, RRF_K, VECTOR_WEIGHT, fuse, fused_order, fused_rows


def _reference(vector: list[tuple[str, int, float]], lexical: list[tuple[str, int, float]], limit: int,
               cosines: dict[int, float]) -> list[tuple[str, int, float]]:
    """The fusion as first written (adapters/shared/fusion.py before it worked on arrays)."""
    fused: dict[int, float] = {}
    cosine: dict[int, float] = {}
    scope_of: dict[int, str] = {}
    for rank, (scope, rowid, score) in enumerate(vector):
        fused[rowid] = VECTOR_WEIGHT / (RRF_K + rank + 1)
        cosine[rowid] = score
        scope_of[rowid] = scope
    for rank, (scope, rowid, _) in enumerate(lexical):
        fused[rowid] = fused.get(rowid, 0.0) + LEXICAL_WEIGHT / (RRF_K + rank + 1)
        if rowid not in cosine:
            cosine[rowid] = cosines.get(rowid, 0.0)
            scope_of[rowid] = scope
    order = sorted((-weight, -cosine[rowid], rowid) for rowid, weight in fused.items())[:limit]
    out: list[tuple[str, int, float]] = []
    floor = -np.inf
    for _, _, rowid in reversed(order):
        floor = min(1.0, max(cosine[rowid], floor + 1e-6 if floor > -np.inf else cosine[rowid]))
        out.append((scope_of[rowid], rowid, floor))
    out.reverse()
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_array_fusion_orders_and_scores_as_the_plain_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(1500):
        rows = int(rng.integers(1, 30))
        similarity = rng.choice([-0.2, 0.0, 0.3, 0.3, 0.7, 1.0, 1.0000001], rows) if rng.random() < 0.5 else rng.standard_normal(rows)
        scope_of_row = [f"s{int(rng.integers(0, 3))}" for _ in range(rows)]
        vector_rows = rng.permutation(rows)[: int(rng.integers(0, rows + 1))].tolist()
        lexical_rows = rng.permutation(rows)[: int(rng.integers(0, rows + 1))].tolist()
        vector = [(scope_of_row[r], 1000 + r, float(similarity[r])) for r in vector_rows]
        lexical = [(scope_of_row[r], 1000 + r, float(rng.integers(1, 5))) for r in lexical_rows]
        cosines = {1000 + r: float(similarity[r]) for r in lexical_rows if rng.random() < 0.8}
        limit = int(rng.integers(1, rows + 3))
        assert fuse(vector, lexical, limit, cosines) == _reference(vector, lexical, limit, cosines), (vector, lexical, limit, cosines)


def _fused_rows_case(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Rows named by index (a scan's buffer), distinct ids, cosines with many ties, two rankings sharing rows."""
    ids = rng.permutation(10 * size + 10)[:size].astype(np.int64) + 1
    pool = np.asarray([-0.25, 0.0, 0.3, 0.3, 0.7, 0.999999, 1.0, 1.0000001], dtype=np.float32)
    cosines = rng.choice(pool, size) if rng.random() < 0.6 else rng.standard_normal(size).astype(np.float32)
    vector = rng.permutation(size)[: int(rng.integers(0, size + 1))]
    lexical = rng.permutation(size)[: int(rng.integers(0, size + 1))]
    if rng.random() < 0.3:  # many shared rows, also in the same order
        lexical = np.concatenate([vector[: int(rng.integers(0, len(vector) + 1))], lexical])
        lexical = lexical[np.sort(np.unique(lexical, return_index=True)[1])]
    return ids, cosines, vector, lexical, int(rng.integers(1, size + 3))


@pytest.mark.parametrize("seed", range(3))
def test_the_fusion_of_distinct_rows_is_fused_order_and_the_plain_fusion(seed: int) -> None:
    """`fused_rows` (the local search's form: rows named by buffer index, matched through a
    scratch array, weights summed at once) against `fused_order` over the same ids and against the
    fusion as first written: the same rows, order and scores, to the bit; also past the rank
    tables computed at import (rankings longer than 1,024)."""
    rng = np.random.default_rng(seed)
    past_tables = 0
    for case in range(1200):
        size = 1500 if case % 300 == 0 else int(rng.integers(1, 40))
        ids, cosines, vector, lexical, limit = _fused_rows_case(rng, size)
        past_tables += max(len(vector), len(lexical)) > 1024
        picked, scores = fused_rows(vector, lexical, ids, cosines, limit)
        both = np.concatenate([vector, lexical])
        at, expected_scores = fused_order(ids[both], cosines[both], len(vector), limit)
        assert ids[picked].tolist() == ids[both[at]].tolist() and scores == expected_scores, (ids, cosines, vector, lexical, limit)
        plain = _reference([("s", int(ids[r]), float(cosines[r])) for r in vector], [("s", int(ids[r]), 1.0) for r in lexical], limit,
                           {int(i): float(c) for i, c in zip(ids, cosines)})
        assert [(int(i), s) for i, s in zip(ids[picked].tolist(), scores)] == [(rowid, score) for _, rowid, score in plain]
    assert past_tables


def test_fused_order_names_positions_and_prefers_the_vector_entry_of_a_shared_row() -> None:
    ids = np.asarray([7, 3, 9, 3, 5])  # vector: 7, 3, 9; lexical: 3, 5
    cosines = np.asarray([0.8, 0.6, 0.5, -9.0, 0.1])  # the lexical entry's cosine of 3 is never used
    picked, scores = fused_order(ids, cosines, 3, 10)
    assert picked.tolist() == [0, 1, 2, 4]  # 3 fused from both channels, named by its vector entry
    assert scores[1] >= 0.6 and scores == sorted(scores, reverse=True)


async def test_the_local_search_fuses_its_scan_as_the_tuple_fusion_does(tmp_path) -> None:
    """`search` ranks the scan's buffer rows without building tuples first; what it loads must be
    exactly what the tuple form of the fusion gives for the same two channel rankings."""
    store = LocalBackend(tmp_path / "store", embedder=HashingEmbedder(384))
    alice = ScopeKey.private("acme", "alice")
    team = ScopeKey.workspace("acme", "core")
    words = ["deploy", "api", "friday", "budget", "retro", "kestrel", "接口", "发布", "lunch", "design"]
    rng = np.random.default_rng(5)
    items = []
    for i in range(120):
        text = " ".join(rng.choice(words, int(rng.integers(1, 5))).tolist()) + f" note {i % 7}"
        items.append(((alice, team)[i % 2], NewMemory(content=text, kind="note", provenance=Provenance("alice", "assistant", "s1")), f"k{i}"))
    await store.put_many(items)
    scopes = ScopeSet.of(alice, team)
    try:
        for question in ("deploy api friday", "接口发布", "kestrel budget note", "nothing shared at all", "note"):
            for depth, limit in ((50, 10), (50, 50), (5, 3), (3, 5)):
                (vector_of_question,) = await store._embed([question])
                with store._lock:
                    scan = store._scan(scopes, vector_of_question, statuses=SearchQuery(scopes, question).statuses, kinds=None, now=None)
                    got = store._fused(scan, question, depth, limit)
                    by_vector = scan.top(scan.scores, depth)
                    bm25 = store._bm25(scan, question)
                    by_words = scan.top(bm25, depth) if bm25 is not None else []
                    cosines = {rowid: float(scan.scores[i]) for i, rowid in enumerate(scan.rowids.tolist())}
                expected = fuse(by_vector, by_words, limit, cosines) if by_words else by_vector[:limit]
                assert got == expected, (question, depth, limit)
    finally:
        await store.aclose()


def test_an_id_twice_in_one_ranking_sums_its_terms_under_its_first_entry() -> None:
    """Outside the documented input (each id once per ranking), still one rule: every entry's
    term counts, in input order, and the row is named by its first entry."""
    ids = np.asarray([4, 8, 4, 6])  # vector: 4, 8, 4 (twice); lexical: 6
    cosines = np.asarray([0.5, 0.9, 0.1, 0.2])
    picked, _ = fused_order(ids, cosines, 3, 10)
    weight_of_4 = VECTOR_WEIGHT / (RRF_K + 1) + VECTOR_WEIGHT / (RRF_K + 3)
    assert weight_of_4 > VECTOR_WEIGHT / (RRF_K + 2)  # so 4 leads although 8 is more similar
    assert picked.tolist() == [0, 1, 3]
