"""BM25 over a scan (`LocalLexical._bm25`) against BM25 written the plain way, score for score, to the bit.

The reference shares nothing with the search but the tokenizer and its constants: each row's
words are read from its content in SQLite (`lexical.terms`), which rows may be returned is
worked out from the stored status, kind, expiry and memory ids, and the statistics (how many
rows, how many hold each word, their average length) are those of exactly those rows. The
arithmetic is the search's own, one row at a time (lengths and the length norm in float32, the
rest in float64, a row's terms summed in the order of their digests), so any change of the fast
path that moves a score by one bit, scores a masked row, or counts rows the ScopeSet does not
return (another scope, a forgotten or expired row: a side channel) fails here.

The corpora are random (a small vocabulary, repeated words, Chinese, empty texts), grown in
batches between searches so partitions hold their postings in several pieces and merge them,
and changed by edits and deletions; the ScopeSets mix scopes, memory-id restrictions, statuses,
kinds and the time of the search.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from adapters.base import MemoryPatch, NewMemory, Provenance, Status
from adapters.local import LocalBackend
from adapters.local import kernels, lexical
from adapters.local.postings import digest_value
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder

SCOPES = (ScopeKey.private("acme", "alice"), ScopeKey.private("acme", "bob"), ScopeKey.workspace("acme", "core"))
WORDS = ("avocet", "bittern", "curlew", "dunlin", "egret", "fulmar", "the", "note", "血压", "西湖")
PROV = Provenance("alice", "assistant", "s1")


def _text(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return "…"  # no word at all: length 0, never a candidate
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))


def _reference(db: sqlite3.Connection, scopes: ScopeSet, statuses: frozenset[Status], kinds: frozenset[str] | None,
               now: float, question: str) -> dict[int, float]:
    """rowid -> BM25 of every returnable row holding a word of `question`, computed row by row."""
    returnable: dict[int, list[int]] = {}  # rowid -> its term digests, in order
    for entry in scopes:
        rows = db.execute("SELECT rowid, id, status, kind, expires_at, content FROM memories WHERE scope = ?", (str(entry.key),)).fetchall()
        for rowid, memory_id, status, kind, expires_at, content in rows:
            if status not in {s.value for s in statuses} or (kinds is not None and kind not in kinds):
                continue
            if (expires_at is not None and expires_at <= now) or (entry.memory_ids is not None and memory_id not in entry.memory_ids):
                continue
            returnable[rowid] = [digest_value(lexical._digest(t)) for t in lexical.terms(content)]
    wanted = sorted({digest_value(lexical._digest(t)) for t in list(dict.fromkeys(lexical.terms(question)))[: lexical.MAX_QUERY_TERMS]})
    if not returnable or not wanted:
        return {}
    n_docs = len(returnable)
    held_by = {d: sum(1 for words in returnable.values() if d in words) for d in wanted}
    idf = {d: float(np.log1p(np.float64((n_docs - float(held_by[d]) + 0.5) / (held_by[d] + 0.5)))) for d in wanted}
    # the mean of float32 lengths: their sum (exact: a few thousand words) over the count, as float32
    avg_length = float(np.float32(sum(len(words) for words in returnable.values()) / n_docs)) or 1.0
    scores: dict[int, float] = {}
    for rowid, words in returnable.items():
        counts = Counter(words)
        norm = float(lexical.K1 * (1.0 - lexical.B + lexical.B * np.float32(len(words)) / avg_length))  # float32 throughout
        score = 0.0
        for d in wanted:
            if counts[d]:
                count = float(counts[d])
                score += idf[d] * count * (lexical.K1 + 1.0) / (count + norm)
        if score > 0.0:
            scores[rowid] = score
    return scores


def _scope_set(rng: random.Random, db: sqlite3.Connection) -> ScopeSet:
    entries = []
    for key in rng.sample(SCOPES, rng.randint(1, len(SCOPES))):
        only = None
        if rng.random() < 0.25:  # an entry restricted to some of its memories (and an id of nothing)
            ids = [r[0] for r in db.execute("SELECT id FROM memories WHERE scope = ?", (str(key),))]
            only = frozenset(rng.sample(ids, min(len(ids), rng.randint(0, 6))) + ["no-such-id"])
        entries.append(ScopeEntry(key, memory_ids=only))
    return ScopeSet(tuple(entries))


async def grow_world(store: LocalBackend, rng: random.Random, scope_of: dict[str, ScopeKey], step: int, *, text: Callable[[], str],
                     scopes: tuple[ScopeKey, ...], batch_size: tuple[int, int] = (1, 40), expiring: float = 0.15, churn_every: int = 5,
                     churned: int = 4) -> None:
    """One step of a random world: a batch of new rows in random scopes (some pending, some
    expiring, some already expired, two kinds), and every `churn_every` steps edits and
    deletions, so positions move and partitions reload. `scope_of` (memory id -> scope) is kept."""
    batch = []
    for i in range(rng.randint(*batch_size)):
        expires = time.time() + rng.choice([-100.0, 3600.0]) if rng.random() < expiring else None
        status = rng.choice([Status.ACTIVE, Status.ACTIVE, Status.ACTIVE, Status.PENDING])
        memory = NewMemory(content=text(), kind=rng.choice(["note", "fact"]), provenance=PROV, status=status, expires_at=expires)
        batch.append((rng.choice(scopes), memory, f"{step}-{i}"))
    made = await store.put_many(batch)
    scope_of.update((memory.id, scope) for memory, (scope, _, _) in zip(made, batch))
    if step % churn_every == churn_every - 1:
        for memory_id in rng.sample(sorted(scope_of), min(churned, len(scope_of))):
            if rng.random() < 0.5:
                await store.update(scope_of[memory_id], memory_id, MemoryPatch(content=text()))
            else:
                await store.delete(scope_of.pop(memory_id), memory_id)


@pytest.fixture(params=["kernel", "numpy"])
def bm25_path(request, monkeypatch) -> str:
    """Each test below runs on both ways of summing: the compiled kernel and the numpy path."""
    if request.param == "kernel" and kernels.compiled is None:
        pytest.skip("the compiled kernels were not built by this install (no C compiler): the numpy path alone runs")
    if request.param == "numpy":
        monkeypatch.setattr(kernels, "compiled", None)
    return request.param


@pytest.mark.parametrize("seed", range(3))
async def test_bm25_over_a_scan_is_the_plain_bm25_of_its_returnable_rows_to_the_bit(tmp_path, seed: int, bm25_path: str) -> None:
    rng = random.Random(seed)
    store = LocalBackend(tmp_path / "store", embedder=HashingEmbedder(64))
    db = sqlite3.connect(tmp_path / "store" / "memories.sqlite3")
    checked = scored = 0
    scope_of: dict[str, ScopeKey] = {}
    try:
        for step in range(24):
            await grow_world(store, rng, scope_of, step, text=lambda: _text(rng), scopes=SCOPES)
            for _ in range(6):
                scopes = _scope_set(rng, db)
                statuses = rng.choice([frozenset({Status.ACTIVE}), frozenset({Status.ACTIVE, Status.PENDING})])
                kinds = rng.choice([None, None, frozenset({"note"}), frozenset({"fact", "absent"})])
                question = " ".join(rng.sample(WORDS, rng.randint(1, 4))) + rng.choice(["", " plover", " the the"])
                now = time.time()
                expected = _reference(db, scopes, statuses, kinds, now, question)
                with store._lock:
                    scan = store._scan(scopes, None, statuses=statuses, kinds=kinds, now=now)
                    bm25 = store._bm25(scan, question)
                    rowids = scan.rowids.tolist()
                want = np.asarray([expected.get(r, -np.inf) for r in rowids], dtype=np.float64)
                got = np.full(len(rowids), -np.inf) if bm25 is None else bm25
                assert got.dtype == np.float64 and got.shape == want.shape
                assert set(expected) <= set(rowids), "a returnable row missing from the scan"
                bad = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
                assert not len(bad), [(rowids[i], float(got[i]), float(want[i])) for i in bad[:5]]
                checked += 1
                scored += len(expected)
    finally:
        db.close()
        await store.aclose()
    assert checked and scored > 100  # the comparison ran over rows that score, not only empty scans
