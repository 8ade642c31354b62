"""Another process's commit drops only the partitions it changed. Counted by
partition loads (no timing): a write to scope A never reloads this process's cache of scope B,
and a recall of A sees the new memory (and never a deleted one)."""

from __future__ import annotations

import asyncio
import multiprocessing

from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey, ScopeSet

A = ScopeKey.workspace("acme", "alpha")
B = ScopeKey.workspace("acme", "beta")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


async def ids(backend: LocalBackend, scope: ScopeKey, text: str) -> set[str]:
    return {h.memory.id for h in (await backend.search(SearchQuery(ScopeSet.of(scope), text, limit=50, statuses=frozenset(Status)))).hits}


async def test_a_write_to_scope_a_elsewhere_does_not_reload_scope_b_here(tmp_path):
    reader = LocalBackend(tmp_path / "s")
    writer = LocalBackend(tmp_path / "s")  # its own connection: commits look foreign to `reader`
    await writer.put_many([(A, mem(f"alpha {i}"), f"a{i}") for i in range(5)] + [(B, mem(f"beta {i}"), f"b{i}") for i in range(5)])
    assert len(await ids(reader, A, "alpha")) == 5 and len(await ids(reader, B, "beta")) == 5
    assert reader.partition_loads == {A: 1, B: 1}
    fresh = await writer.put(A, mem("alpha brand new"), idempotency_key="a-new")
    assert len(await ids(reader, B, "beta")) == 5
    assert reader.partition_loads[B] == 1  # B was not touched: not reloaded
    assert fresh.id in await ids(reader, A, "alpha brand new")  # A was: the new memory is seen
    assert reader.partition_loads[A] == 2
    # every kind of write invalidates exactly its own scope: update, status change, delete
    await writer.update(A, fresh.id, MemoryPatch(content="alpha rewritten"))
    assert "alpha rewritten" in {h.memory.content for h in (await reader.search(SearchQuery(ScopeSet.of(A), "alpha rewritten"))).hits}
    await writer.update(A, fresh.id, MemoryPatch(status=Status.SUPERSEDED))
    assert fresh.id not in {h.memory.id for h in (await reader.search(SearchQuery(ScopeSet.of(A), "alpha rewritten"))).hits}
    assert await writer.delete(A, fresh.id)
    assert fresh.id not in await ids(reader, A, "alpha rewritten")
    assert len(await ids(reader, B, "beta")) == 5 and reader.partition_loads[B] == 1
    await reader.aclose(); await writer.aclose()


async def test_own_writes_need_no_reload_and_interleaved_foreign_writes_are_never_hidden(tmp_path):
    """The stamp of this process's write must not mask a foreign write to the same scope that
    landed just before it (both are absorbed under the write lock)."""
    me = LocalBackend(tmp_path / "s")
    other = LocalBackend(tmp_path / "s")
    await me.put(A, mem("alpha seed"), idempotency_key="seed")
    assert len(await ids(me, A, "alpha")) == 1
    theirs = await other.put(A, mem("alpha theirs"), idempotency_key="theirs")
    mine = await me.put(A, mem("alpha mine"), idempotency_key="mine")  # no read in between
    assert {theirs.id, mine.id} <= await ids(me, A, "alpha")
    loads = me.partition_loads[A]
    await me.put(A, mem("alpha mine again"), idempotency_key="mine2")
    assert len(await ids(me, A, "alpha")) == 4 and me.partition_loads[A] == loads  # own write: appended, no reload
    await me.aclose(); await other.aclose()


def _write_scope(path: str, scope_text: str, n: int) -> None:
    async def go() -> None:
        backend = LocalBackend(path)
        scope = ScopeKey.parse(scope_text)
        for i in range(n):
            await backend.put(scope, mem(f"alpha from the other process {i}"), idempotency_key=f"p{i}")
        await backend.aclose()

    asyncio.run(go())


async def test_commits_of_another_process_reload_only_the_scope_they_wrote(tmp_path):
    path = str(tmp_path / "s")
    reader = LocalBackend(path)
    await reader.put_many([(A, mem(f"alpha {i}"), f"a{i}") for i in range(3)] + [(B, mem(f"beta {i}"), f"b{i}") for i in range(3)])
    await ids(reader, A, "alpha")
    await ids(reader, B, "beta")
    proc = multiprocessing.get_context("spawn").Process(target=_write_scope, args=(path, str(A), 20))
    proc.start()
    await asyncio.to_thread(proc.join, 120)
    assert proc.exitcode == 0
    assert len(await ids(reader, B, "beta")) == 3 and reader.partition_loads[B] == 1
    assert len(await ids(reader, A, "alpha")) == 23 and reader.partition_loads[A] == 2  # 20 commits, one reload
    await reader.aclose()


async def test_expiry_query_runs_only_once_a_partition_row_can_have_expired(tmp_path, monkeypatch):
    """`Partition.next_expiry` lets a search skip the expiry query while no row of the partition
    can have expired yet, and never lets an expired row through once one can (loaded rows and
    appended rows alike)."""
    from adapters.base import NewMemory, Provenance
    from adapters.local import LocalBackend
    from adapters.local.search import LocalSearch
    from adapters.scopes import ScopeKey, ScopeSet
    from adapters.shared.embedding import HashingEmbedder

    scope = ScopeKey.private("acme", "alice")
    calls: list[float] = []
    real = LocalSearch._expired_rowids

    def counting(self, key, now):  # type: ignore[no-untyped-def]
        calls.append(now)
        return real(self, key, now)

    monkeypatch.setattr(LocalSearch, "_expired_rowids", counting)
    backend = LocalBackend(tmp_path / "s", HashingEmbedder())
    prov = Provenance("alice", "assistant")
    await backend.put(scope, NewMemory("plain apple", "fact", provenance=prov), idempotency_key="k1")
    query = (await backend.embedder.embed(["apple"]))[0]
    assert len(backend.search_vector(ScopeSet.of(scope), query, limit=5, now=1_000.0)) == 1 and calls == []
    # appended to the loaded partition: its expiry lowers the partition's bound
    await backend.put(scope, NewMemory("expiring apple", "fact", provenance=prov, expires_at=2_000.0), idempotency_key="k2")
    assert len(backend.search_vector(ScopeSet.of(scope), query, limit=5, now=1_500.0)) == 2 and calls == []
    assert len(backend.search_vector(ScopeSet.of(scope), query, limit=5, now=2_000.0)) == 1 and calls == [2_000.0]
    # reloaded from SQLite: the bound is recomputed from the stored rows
    backend._partitions.clear()
    calls.clear()
    assert len(backend.search_vector(ScopeSet.of(scope), query, limit=5, now=1_999.0)) == 2 and calls == []
    assert len(backend.search_vector(ScopeSet.of(scope), query, limit=5, now=2_500.0)) == 1 and calls == [2_500.0]
    await backend.aclose()


async def test_a_foreign_edit_reloads_its_scope_with_the_new_records_and_leaves_the_other_scope_in_memory(tmp_path):
    """Records are decoded with their partition: after another process edits a memory of A
    (no new vector, so only its record changed), A is reloaded and serves the edited record, from
    the reload's own decode; B's records are still served from memory, without any SQL."""
    reader = LocalBackend(tmp_path / "s")
    writer = LocalBackend(tmp_path / "s")
    stored = await writer.put_many([(A, mem(f"alpha {i}"), f"a{i}") for i in range(4)] + [(B, mem(f"beta {i}"), f"b{i}") for i in range(4)])
    assert len(await ids(reader, A, "alpha")) == 4 and len(await ids(reader, B, "beta")) == 4
    reads: list[str] = []
    reader._db.set_trace_callback(lambda sql: reads.append(sql) if "FROM memories WHERE rowid IN" in sql else None)
    await writer.update(A, stored[0].id, MemoryPatch(confidence=0.25, metadata={"edited": True}))
    hits = {h.memory.id: h.memory for h in (await reader.search(SearchQuery(ScopeSet.of(A, B), "alpha beta", limit=50))).hits}
    assert (hits[stored[0].id].confidence, dict(hits[stored[0].id].metadata)) == (0.25, {"edited": True})
    assert reads == [] and reader.partition_loads == {A: 2, B: 1}  # A reloaded with its records, B untouched
    await reader.aclose(); await writer.aclose()
