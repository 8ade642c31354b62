"""The local search's fused ranking (`LocalSearch._fused`) against the same ranking done the long way.

The long way scores every returnable row in both channels and sorts them all: which rows may be
returned is read from the stored status, kind, expiry and memory ids; each row's BM25 is the plain
row-by-row formula over its content (tests/local/test_bm25_reference.py); each channel's ranking
is every candidate sorted by score, equal scores in buffer order, cut at the depth; the fusion is
the one first written with dicts and a sorted list (tests/local/test_fusion_order.py). The fast
path may rank the lexical channel any way it likes (sums with 0 for "no candidate", a cut read
from a sorted copy, ...) but must hand the fusion exactly these rows in exactly this order, so
every fused row, its order and its score (to the bit) must match.

The worlds are made for the places a shortcut would slip: a word nearly every row holds and rare
ones (few distinct scores, long ties straddling the cut), identical texts (equal BM25 and equal
cosines), rows masked by status, kind, expiry and memory-id restrictions, several scopes, and
partitions grown in batches between searches so their postings come in several pieces.
"""

from __future__ import annotations

import random
import sqlite3
import time

import numpy as np
import pytest

from adapters.base import Status
from adapters.local import LocalBackend
from adapters.local.lexical_search import _returnable_length
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder
from tests.local.test_bm25_reference import _reference as plain_bm25
from tests.local.test_bm25_reference import grow_world
from tests.local.test_fusion_order import _reference as plain_fusion

SCOPES = (ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "bob"), ScopeKey.workspace("acme", "core"), ScopeKey.workspace("acme", "ops"))
#: one word nearly every row holds, a few common ones, many rare ones (BM25 then has few distinct values)
COMMON, USUAL, RARE = ("about",), ("deploy", "budget", "retro", "note"), tuple(f"w{i}" for i in range(24)) + ("血压", "西湖")


def _text(rng: random.Random, seen: list[str]) -> str:
    """A row's content (noted in `seen`): often a text written before, which scores alike in both channels."""
    if seen and rng.random() < 0.2:
        return rng.choice(seen)  # the same text again: the same BM25, the same cosine
    if rng.random() < 0.03:
        text = "…"  # no word at all
    else:
        words = [COMMON[0]] if rng.random() < 0.9 else []
        words += rng.sample(USUAL, rng.randint(0, 2)) + rng.sample(RARE, rng.randint(0, 2))
        rng.shuffle(words)
        text = " ".join(words * rng.choice([1, 1, 2])) or "…"
    seen.append(text)
    return text


def _question(rng: random.Random) -> str:
    return " ".join([*rng.sample(COMMON + USUAL, rng.randint(0, 3)), *rng.sample(RARE, rng.randint(0, 2))]) or "about"


def _returnable(db: sqlite3.Connection, scopes: ScopeSet, statuses: frozenset[Status], kinds: frozenset[str] | None, now: float) -> set[int]:
    rows: set[int] = set()
    for entry in scopes:
        for rowid, memory_id, status, kind, expires_at in db.execute("SELECT rowid, id, status, kind, expires_at FROM memories WHERE scope = ?", (str(entry.key),)):
            if status in {s.value for s in statuses} and (kinds is None or kind in kinds) and (expires_at is None or expires_at > now) \
                    and (entry.memory_ids is None or memory_id in entry.memory_ids):
                rows.add(rowid)
    return rows


def _scope_set(rng: random.Random, db: sqlite3.Connection) -> ScopeSet:
    entries = []
    for key in rng.sample(SCOPES, rng.randint(1, len(SCOPES))):
        only = None
        if rng.random() < 0.2:
            ids = [r[0] for r in db.execute("SELECT id FROM memories WHERE scope = ?", (str(key),))]
            only = frozenset(rng.sample(ids, min(len(ids), rng.randint(0, 30))) + ["no-such-id"])
        entries.append(ScopeEntry(key, memory_ids=only))
    return ScopeSet(tuple(entries))


def _long_way(scan, returnable: set[int], bm25: dict[int, float], depth: int, limit: int) -> list[tuple[ScopeKey, int, float]]:
    """Every returnable row scored in both channels, each channel sorted whole, then the plain fusion."""
    keyed = dict(zip(scan.rowids.tolist(), scan.rows(np.arange(scan.size))))  # rowid -> (scope, rowid)
    at = {rowid: i for i, rowid in enumerate(scan.rowids.tolist())}  # buffer order breaks ties
    cosines = {rowid: float(scan.scores[at[rowid]]) for rowid in returnable}
    by_vector = sorted(returnable, key=lambda r: (-cosines[r], at[r]))[:depth]
    by_words = sorted(bm25, key=lambda r: (-bm25[r], at[r]))[:depth]
    vector = [(keyed[r][0], r, cosines[r]) for r in by_vector]
    if not by_words:
        return vector[:limit]
    return plain_fusion(vector, [(keyed[r][0], r, bm25[r]) for r in by_words], limit, cosines)


@pytest.mark.parametrize("seed", range(3))
async def test_the_fused_ranking_is_the_fusion_of_both_channels_scored_and_sorted_whole(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    store = LocalBackend(tmp_path / "store", embedder=HashingEmbedder(64))
    db = sqlite3.connect(tmp_path / "store" / "memories.sqlite3")
    scope_of: dict[str, ScopeKey] = {}
    seen: list[str] = []
    compared = lexical_ties_at_cut = 0
    try:
        for step in range(14):
            await grow_world(store, rng, scope_of, step, text=lambda: _text(rng, seen), scopes=SCOPES, batch_size=(20, 70), expiring=0.1,
                             churn_every=4, churned=6)
            for _ in range(8):
                scopes = _scope_set(rng, db)
                statuses = rng.choice([frozenset({Status.ACTIVE}), frozenset({Status.ACTIVE, Status.PENDING})])
                kinds = rng.choice([None, None, frozenset({"note"})])
                question = _question(rng)
                now = time.time()
                depth, limit = rng.choice([1, 3, 8, 20, 50]), rng.choice([1, 4, 10])
                (vector,) = await store._embed([question])
                with store._lock:
                    scan = store._scan(scopes, vector, statuses=statuses, kinds=kinds, now=now)
                    got = store._fused(scan, question, depth, limit)
                    returnable = _returnable(db, scopes, statuses, kinds, now)
                    bm25 = plain_bm25(db, scopes, statuses, kinds, now, question)
                    expected = _long_way(scan, returnable, bm25, depth, limit)
                assert got == expected, (seed, step, question, depth, limit)
                compared += 1
                scores = sorted(bm25.values(), reverse=True)
                lexical_ties_at_cut += len(scores) > depth and scores[depth - 1] == scores[depth]
    finally:
        db.close()
        await store.aclose()
    assert compared == 14 * 8 and lexical_ties_at_cut > 10  # the cut fell inside a tie often, not once


def test_the_summed_length_of_the_returnable_rows_is_the_float32_sums_also_past_float32s_whole_numbers() -> None:
    """BM25's mean length takes the returnable rows' summed length as their float32 sum gives it;
    the shortcut (one dot product) is exact only below 2**24, and past it must give way."""
    rng = np.random.default_rng(7)
    past = 0
    for _ in range(400):
        n = int(rng.integers(1, 3000))
        high = int(rng.choice([40, 3000, 30_000]))
        lengths = rng.integers(0, high, n).astype(np.float32)
        returnable = rng.random(n) < rng.random()
        want = float(lengths[returnable].sum())
        past += want >= 2**24
        assert _returnable_length(lengths, returnable) == want, (n, high)
    assert past > 20
