"""The local backend keeps the decoded rows of recalled hits; a changed memory never comes back
from them. An oracle (a plain dict of what each memory is now) is compared with every search
after random forgets, edits, deletes, moves between scopes and writes by another connection
(another process, as far as SQLite can tell). No timing: the cache is observed through the SQL
the store runs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status
from adapters.local import LocalBackend, blas
from adapters.local.partitions import Partition
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder

A = ScopeKey.workspace("acme", "alpha")
B = ScopeKey.workspace("acme", "beta")
PROV = Provenance("alice", "assistant", "s1")
WORDS = "apple river stone cloud maple ember harbor violet".split()


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


def loads_of_hits(backend: LocalBackend) -> list[str]:
    statements: list[str] = []
    backend._db.set_trace_callback(lambda sql: statements.append(sql) if "WHERE rowid IN" in sql else None)
    return statements


async def test_a_repeated_recall_decodes_nothing_again(tmp_path):
    backend = LocalBackend(tmp_path / "s", HashingEmbedder())
    await backend.put_many([(A, mem(f"apple note {i}"), f"k{i}") for i in range(8)])
    query = SearchQuery(ScopeSet.of(A), "apple note", limit=5)
    first = (await backend.search(query)).hits
    statements = loads_of_hits(backend)
    again = (await backend.search(query)).hits
    assert [h.memory for h in again] == [h.memory for h in first] and len(again) == 5
    assert statements == []  # every hit came from the decoded rows
    await backend.update(A, first[0].memory.id, MemoryPatch(confidence=0.5))
    edited = (await backend.search(query)).hits
    assert len(statements) == 1  # the write dropped the scope's decoded rows: read again
    assert {h.memory.id: h.memory.confidence for h in edited}[first[0].memory.id] == 0.5
    await backend.aclose()


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_no_forgotten_edited_deleted_or_moved_memory_comes_back(tmp_path, seed):
    rng = random.Random(seed)
    reader = LocalBackend(tmp_path / "s", HashingEmbedder())
    other = LocalBackend(tmp_path / "s", HashingEmbedder())  # its own connection: its commits are foreign
    oracle: dict[str, tuple[ScopeKey, str, float, Status, dict]] = {}  # id -> what the memory is now
    n = 0

    async def put(scope: ScopeKey, text: str, meta: dict, writer: LocalBackend) -> None:
        nonlocal n
        n += 1
        stored = await writer.put(scope, mem(text, metadata=meta), idempotency_key=f"k{n}")
        oracle[stored.id] = (scope, text, stored.confidence, Status.ACTIVE, meta)

    for i in range(12):
        await put(A if i % 2 else B, f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}", {"n": i}, reader)
    for step in range(60):
        for scopes in (ScopeSet.of(A, B), ScopeSet.of(A), ScopeSet.of(B)):
            for word in rng.sample(WORDS, 2):
                hits = (await reader.search(SearchQuery(scopes, word, limit=20))).hits
                want = {mid for mid, (scope, *_, status, _) in oracle.items() if scope in scopes.keys and status is Status.ACTIVE}
                assert {h.memory.id for h in hits} == want, f"step {step}"  # limit 20 > rows: all of them
                for h in hits:
                    scope, text, confidence, status, meta = oracle[h.memory.id]
                    m = h.memory
                    assert (h.scope, m.scope, m.content, m.confidence, m.status, dict(m.metadata)) == (scope, scope, text, confidence, status, meta)
        writer = rng.choice((reader, other))
        live = [mid for mid, v in oracle.items() if v[3] is Status.ACTIVE]
        action = rng.choice(("forget", "edit", "content", "delete", "move", "put"))
        if not live or action == "put":
            await put(rng.choice((A, B)), f"{rng.choice(WORDS)} fresh {step}", {"step": step}, writer)
            continue
        mid = rng.choice(live)
        scope, text, confidence, status, meta = oracle[mid]
        if action == "forget":
            await writer.update(scope, mid, MemoryPatch(status=Status.FORGOTTEN))
            oracle[mid] = (scope, text, confidence, Status.FORGOTTEN, meta)
        elif action == "edit":  # no new vector: the partition stays, only the row changes
            confidence, meta = round(rng.random(), 3), {"edited": step}
            await writer.update(scope, mid, MemoryPatch(confidence=confidence, metadata=meta))
            oracle[mid] = (scope, text, confidence, status, meta)
        elif action == "content":
            text = f"{rng.choice(WORDS)} rewritten {step}"
            await writer.update(scope, mid, MemoryPatch(content=text))
            oracle[mid] = (scope, text, confidence, status, meta)
        elif action == "delete":
            assert await writer.delete(scope, mid)
            del oracle[mid]
        else:  # re-scoped: the memory leaves its scope and lives on in the other one
            assert await writer.delete(scope, mid)
            del oracle[mid]
            await put(B if scope == A else A, text, meta, writer)
    await reader.aclose(); await other.aclose()


class _FakeBlas:
    def __init__(self, threads: int) -> None:
        self.threads = threads

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n


async def test_a_large_scan_runs_on_one_blas_thread_and_restores_the_count(tmp_path, monkeypatch):
    fake = _FakeBlas(4)
    monkeypatch.setattr(blas, "_blas", [fake])
    monkeypatch.setattr(blas, "ONE_THREAD_MIN_ELEMENTS", 64)  # this test's tiny partitions count as large
    seen: list[int] = []
    real = Partition.scores_into

    def spy(self, query, out):
        seen.append(fake.threads)
        return real(self, query, out)

    monkeypatch.setattr(Partition, "scores_into", spy)
    backend = LocalBackend(tmp_path / "s", HashingEmbedder())
    await backend.put_many([(A, mem(f"apple {i}"), f"a{i}") for i in range(3)] + [(B, mem(f"stone {i}"), f"b{i}") for i in range(3)])
    query = np.ones(backend.embedder.dimension, dtype=np.float32) / np.sqrt(backend.embedder.dimension)
    assert len(backend.search_vector(ScopeSet.of(A, B), query, limit=4)) == 4
    assert seen == [1, 1] and fake.threads == 4  # one thread inside the scan, the process's count after

    def boom(self, query, out):
        raise RuntimeError("scan failed")

    monkeypatch.setattr(Partition, "scores_into", boom)
    with pytest.raises(RuntimeError):
        backend.search_vector(ScopeSet.of(A), query, limit=2)
    assert fake.threads == 4  # restored on the way out of a failure too
    monkeypatch.setattr(Partition, "scores_into", spy)
    monkeypatch.setattr(blas, "ONE_THREAD_MIN_ELEMENTS", 1 << 40)  # a small scan: left as configured
    seen.clear()
    backend.search_vector(ScopeSet.of(A), query, limit=2)
    assert seen == [4]
    await backend.aclose()
