"""The local backend keeps the decoded rows of recalled hits; a changed memory never comes back
from them. An oracle (a plain dict of what each memory is now) is compared with every search
after random forgets, edits, deletes, moves between scopes and writes by another connection
(another process, as far as SQLite can tell). No timing: the cache is observed through the SQL
the store runs."""

from __future__ import annotations

import json
import random
import sqlite3
import time

import numpy as np
import pytest

from adapters.base import (
    MemoryPatch,
    NewMemory,
    Provenance,
    SearchQuery,
    Status,
    StoredMemory,
)
from adapters.local import LocalBackend, blas
from adapters.local.partitions import Partition
from adapters.local.records import (
    COLUMNS,
    RowDamage,
    memories_of_columns,
    provenance_json,
    row_to_memory,
)
from adapters.local.schema import db_path
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
    backend._db.set_trace_callback(lambda sql: statements.append(sql) if "FROM memories WHERE rowid IN" in sql else None)
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


# -- records decoded with their partition -------------------------------------------------------
async def test_the_first_recall_of_a_loaded_partition_reads_no_record_from_sqlite(tmp_path):
    """The partition load reads each row's record with its vector, so the hits of a scope's
    first recall are already decoded: no `WHERE rowid IN` for them."""
    writer = LocalBackend(tmp_path / "s", HashingEmbedder())
    await writer.put_many([(A, mem(f"apple note {i}", metadata={"n": i}), f"k{i}") for i in range(12)])
    await writer.aclose()
    backend = LocalBackend(tmp_path / "s", HashingEmbedder())
    statements = loads_of_hits(backend)
    hits = (await backend.search(SearchQuery(ScopeSet.of(A), "apple note", limit=12))).hits
    assert len(hits) == 12 and statements == [] and backend.partition_loads[A] == 1
    assert {h.memory.id: dict(h.memory.metadata) for h in hits} == {m.id: dict(m.metadata) for m in await _all_records(backend, A)}
    await backend.aclose()


async def _all_records(backend: LocalBackend, scope: ScopeKey) -> list[StoredMemory]:
    rows = sqlite3.connect(db_path(backend.path)).execute(f"SELECT {COLUMNS} FROM memories WHERE scope = ?", (str(scope),)).fetchall()
    return [row_to_memory(r) for r in rows]


async def test_a_row_whose_record_does_not_decode_is_left_to_the_path_that_quarantines_it(tmp_path):
    """The load decodes sound rows only; a row with a damaged record column (its vector sound,
    so it is in the partition) is read from SQLite when it is a hit, and quarantined there."""
    writer = LocalBackend(tmp_path / "s", HashingEmbedder())
    stored = await writer.put_many([(A, mem(f"apple note {i}"), f"k{i}") for i in range(6)])
    await writer.aclose()
    victim = stored[2]
    with sqlite3.connect(db_path(tmp_path / "s")) as conn:
        conn.execute("UPDATE memories SET provenance = '{not json' WHERE id = ?", (victim.id,))
        (rowid,) = conn.execute("SELECT rowid FROM memories WHERE id = ?", (victim.id,)).fetchone()
    backend = LocalBackend(tmp_path / "s", HashingEmbedder())
    statements = loads_of_hits(backend)
    hits = (await backend.search(SearchQuery(ScopeSet.of(A), "apple note", limit=10))).hits
    assert victim.id not in {h.memory.id for h in hits} and len(hits) == 5
    # the damaged row alone was read from SQLite; quarantining it changed the partition, whose
    # decoded rows went with that change, so the search's second ranking read its hits again
    assert statements[0].endswith(f"WHERE rowid IN ({rowid})") and len(statements) == 2
    assert [q.memory_id for q in await backend.quarantined()] == [victim.id]
    await backend.aclose()


_SOUND_PROVENANCE = provenance_json(PROV)
_COLUMN_CHOICES: dict[str, tuple] = {  # per column of `COLUMNS` (rowid and scope aside): sound values, then damaged ones
    "id": ("m1", "m2", b"m3", 7),
    "content": ("some text", "", b"bytes", None, 3),
    "kind": ("note", "fact", 4, None),
    "status": ("active", "forgotten", "superseded", "bogus", None, 1),
    "confidence": (0.5, 1, 0, 0.0, 1.0, 1.5, -0.1, float("nan"), "0.5", None),
    "provenance": (_SOUND_PROVENANCE, provenance_json(Provenance("bob", "agent")), "{not json", "[]", "{}", '{"author_user_id": 1}', None, 5, "[" * 5000),
    "subject_user_id": (None, "bob", "carol"),
    "metadata": ("{}", '{"a": 1, "b": "x"}', '{"n": null}', "[1]", "nope", None, 2, "[" * 5000),
    "created_at": (1.0, 2),
    "updated_at": (3.0, 4),
    "expires_at": (None, 5.0, 6, "soon", b"x"),
}


def _reference_records(rows: list[tuple], scope: ScopeKey) -> list[StoredMemory | None]:
    out: list[StoredMemory | None] = []
    for row in rows:
        try:
            out.append(row_to_memory(row, scope))
        except RowDamage:
            out.append(None)
    return out


@pytest.mark.parametrize("seed, sound_share", [(0, 0.5), (1, 0.5), (2, 0.5), (3, 0.99), (4, 1.0), (5, 1.0)])
def test_the_column_decoder_equals_row_to_memory_on_sound_and_damaged_rows(seed, sound_share):
    """All rows sound: the records are built column by column; one damaged row among them: row
    by row. Either way each is `row_to_memory`'s record of its row, or None where it refuses."""
    rng = random.Random(seed)
    rows = []
    for rowid in range(600):
        sound = rng.random() < sound_share  # a sound row, or one with any value anywhere
        pick = {name: (values[0] if sound and name in ("status", "provenance", "metadata") else rng.choice(values[: 3 if sound else None]))
                for name, values in _COLUMN_CHOICES.items()}
        if sound:
            pick |= {"id": f"m{rowid}", "content": f"text {rowid}", "kind": rng.choice(("note", "fact")), "confidence": rng.choice((rng.random(), 0, 1)),
                     "expires_at": rng.choice((None, 5.0, 6)), "metadata": rng.choice(('{}', '{"a": 1, "b": "x"}'))}
        rows.append((rowid, pick["id"], str(A), pick["content"], pick["kind"], pick["status"], pick["confidence"], pick["provenance"],
                     pick["subject_user_id"], pick["metadata"], pick["created_at"], pick["updated_at"], pick["expires_at"]))
    _, ids, _, contents, kinds, statuses, confidences, provenances, subjects, metadatas, created, updated, expiries = zip(*rows)
    bulk = memories_of_columns(A, ids, contents, kinds, statuses, confidences, provenances, subjects, metadatas, created, updated, expiries)
    want = _reference_records(rows, A)
    assert bulk == want
    if sound_share < 1.0:
        assert sum(m is not None for m in want) > 250 and sum(m is None for m in want) > 0  # both kinds of row were tried
    else:
        assert None not in want
    kept = [m for m in bulk if m is not None]
    for m in kept:  # the same types as row_to_memory's
        assert type(m.confidence) is float and (m.expires_at is None or type(m.expires_at) is float)
    if sound_share < 1.0:  # row by row: every record its own metadata dict
        assert all(type(m.metadata) is dict for m in kept) and len({id(m.metadata) for m in kept}) == len(kept)
    else:  # column by column: equal metadata is one mapping, read-only, so no record can change another's
        assert len({id(m.metadata) for m in kept}) == 2
        with pytest.raises(TypeError):
            kept[0].metadata["n"] = 1  # type: ignore[index]


C = ScopeKey.private("acme", "carol")


@pytest.mark.parametrize("seed", range(5))
async def test_hits_are_the_records_sqlite_holds_after_any_sequence_of_changes(tmp_path, seed):
    """Oracle: after every random change (put, edit of content / metadata / confidence /
    status, forget, delete, a move to another scope, each made here or by another connection,
    and time passing over expiries), searches + load_hits return exactly the permitted,
    unexpired rows, each hit's record equal to its row read straight from SQLite (a plain
    connection, `row_to_memory`): a record decoded at a partition load or for an earlier hit
    never outlives a change."""
    rng = random.Random(seed)
    path = tmp_path / "s"
    reader = LocalBackend(path, HashingEmbedder())
    other = LocalBackend(path, HashingEmbedder())  # its own connection: its commits are foreign to `reader`
    plain = sqlite3.connect(db_path(path))
    statements = loads_of_hits(reader)
    clock = time.time() + 10_000.0  # the searches' `now`; every expiry is in the future of the wall clock
    dim = reader.embedder.dimension
    n = 0

    def reference(scopes: tuple[ScopeKey, ...], statuses: frozenset[Status], now: float) -> dict[str, StoredMemory]:
        marks = ",".join("?" * len(scopes))
        rows = plain.execute(f"SELECT {COLUMNS} FROM memories WHERE scope IN ({marks})", [str(s) for s in scopes]).fetchall()
        return {m.id: m for m in map(row_to_memory, rows) if m.status in statuses and not m.expired(now)}

    async def put(scope: ScopeKey, writer: LocalBackend, text: str | None = None, meta: dict | None = None) -> None:
        nonlocal n
        n += 1
        expires = clock + rng.choice((30.0, 60.0, 200.0)) if rng.random() < 0.3 else None
        memory = mem(text or f"{rng.choice(WORDS)} {rng.choice(WORDS)} {n}", metadata=meta if meta is not None else {"n": n},
                     confidence=round(rng.random(), 3), expires_at=expires)
        await writer.put(scope, memory, idempotency_key=f"k{n}")

    for _ in range(15):
        await put(rng.choice((A, B, C)), reader)
    searches = 0
    for step in range(45):
        for _ in range(3):
            scopes = tuple(rng.sample((A, B, C), rng.randint(1, 3)))
            statuses = rng.choice((frozenset({Status.ACTIVE}), frozenset(Status), frozenset({Status.FORGOTTEN, Status.SUPERSEDED, Status.PENDING})))
            query = np.asarray([rng.gauss(0.0, 1.0) for _ in range(dim)], dtype=np.float32)
            ranked = reader.search_vector(ScopeSet.of(*scopes), query / np.linalg.norm(query), limit=500, statuses=statuses, now=clock)
            hits = reader.load_hits(ranked)
            searches += 1
            want = reference(scopes, statuses, clock)
            assert {h.memory.id for h in hits} == set(want), f"step {step}"
            for h in hits:
                assert h.memory == want[h.memory.id] and h.scope == h.memory.scope, f"step {step}"
        clock += rng.choice((0.0, 10.0, 40.0))  # time passes: rows expire between searches
        writer = rng.choice((reader, other))
        rows = plain.execute("SELECT scope, id, content, metadata FROM memories").fetchall()
        action = rng.choice(("put", "content", "metadata", "confidence", "status", "forget", "delete", "move"))
        if not rows or action == "put":
            await put(rng.choice((A, B, C)), writer)
            continue
        scope_text, mid, content, meta = rng.choice(rows)
        scope = ScopeKey.parse(scope_text)
        if action == "content":
            await writer.update(scope, mid, MemoryPatch(content=f"{rng.choice(WORDS)} rewritten {step}"))
        elif action == "metadata":
            await writer.update(scope, mid, MemoryPatch(metadata={"edited": step}))
        elif action == "confidence":
            await writer.update(scope, mid, MemoryPatch(confidence=round(rng.random(), 3)))
        elif action in ("status", "forget"):
            status = Status.FORGOTTEN if action == "forget" else rng.choice(list(Status))
            await writer.update(scope, mid, MemoryPatch(status=status))
        elif action == "delete":
            assert await writer.delete(scope, mid)
        else:  # re-scoped: the memory leaves its scope and lives on in another one
            assert await writer.delete(scope, mid)
            await put(rng.choice([s for s in (A, B, C) if s != scope]), writer, content, json.loads(meta))
    assert len(statements) < searches  # the decoded rows served many of the searches (the cache was exercised)
    plain.close()
    await reader.aclose(); await other.aclose()


async def test_hits_from_partly_decoded_rows_are_the_hits_read_from_the_table(tmp_path):
    """`search` builds its hits straight from the decoded records when all of them are decoded,
    and sends the whole batch to `_load_hits` at the first one that is not: with one record of
    each of two scopes dropped from memory, the hits (order, scope, record, score) are the same as
    a search that reads every one from SQLite, and only the dropped rows are read."""
    backend = LocalBackend(tmp_path / "s", HashingEmbedder())
    await backend.put_many([(scope, mem(f"apple {WORDS[i % 8]} note {i}"), f"{scope.owner_id}{i}") for scope in (A, B) for i in range(10)])
    query = SearchQuery(ScopeSet.of(A, B), "apple river note", limit=12)
    from_memory = (await backend.search(query)).hits
    assert {h.scope for h in from_memory} == {A, B}
    dropped = [next(h for h in from_memory if h.scope == scope).memory for scope in (A, B)]
    for part in backend._partitions.values():
        for rowid, record in list(part.decoded.items()):
            if record in dropped:
                del part.decoded[rowid]
    statements = loads_of_hits(backend)
    partly = (await backend.search(query)).hits
    assert len(statements) == 1 and statements[0].rsplit("IN (", 1)[1].count(",") == 1  # one read, of the two dropped rows
    for part in backend._partitions.values():
        part.decoded.clear()
    from_table = (await backend.search(query)).hits
    assert partly == from_memory == from_table
    await backend.aclose()
