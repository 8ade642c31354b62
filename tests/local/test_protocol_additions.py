"""The protocol additions in the local store: put says whether it created, list_page walks any
scope with a cursor bound to that scope, find_by_idempotency_key, and the store marker whose
write count is committed with the writes it counts."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sqlite3
import time
from dataclasses import replace

import pytest

from adapters.base import ListPage, MemoryPatch, NewMemory, Provenance, Status, StoreBinding, StoreMarker
from adapters.errors import BackendConflict, InvalidRequest
from adapters.local import LocalBackend
from adapters.scopes import ScopeKey

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


@pytest.fixture
async def store(tmp_path):
    backend = LocalBackend(tmp_path / "store")
    yield backend
    await backend.aclose()


async def test_put_says_it_created_and_a_retry_returns_the_first_record_unchanged(store):
    first = await store.put(ALICE, mem("tea", metadata={"n": 1}), idempotency_key="k")
    retry = await store.put(ALICE, mem("tea", metadata={"n": 1}), idempotency_key="k")
    assert first.created is True and retry.created is False
    assert replace(retry, created=None) == replace(first, created=None)  # the first record, id and stamps included
    batch = await store.put_many([(ALICE, mem("tea", metadata={"n": 1}), "k"), (ALICE, mem("coffee"), "k2")])
    assert [m.created for m in batch] == [False, True] and batch[0].id == first.id
    assert store.count() == 2


async def test_find_by_idempotency_key_answers_did_it_land_in_that_scope_only(store):
    stored = await store.put(ALICE, mem("landed"), idempotency_key="op-1")
    found = await store.find_by_idempotency_key(ALICE, "op-1")
    assert found is not None and found.id == stored.id and found.content == "landed"
    assert await store.find_by_idempotency_key(ALICE, "op-2") is None
    assert await store.find_by_idempotency_key(BOB, "op-1") is None  # another scope's key is not this one


async def test_list_page_walks_more_than_10000_memories_each_exactly_once_in_a_stable_order(store):
    n = 10_250
    written = []
    for start in range(0, n, 2_500):
        written += await store.put_many([(ALICE, mem(f"m{i}"), f"k{i}") for i in range(start, min(n, start + 2_500))])
    await store.put_many([(BOB, mem(f"bob {i}"), f"k{i}") for i in range(30)])  # a neighbour that must not appear
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await store.list_page(ALICE, cursor=cursor, limit=1_000)
        assert isinstance(page, ListPage) and len(page.memories) <= 1_000
        assert all(m.scope == ALICE for m in page.memories)
        seen += [m.id for m in page.memories]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 11
    assert seen == [m.id for m in written]  # insertion order, nothing skipped, nothing twice


async def test_list_page_survives_deletes_during_the_walk(store):
    """Erasure deletes as it walks: no page may shift and skip a row it has not seen yet."""
    written = await store.put_many([(ALICE, mem(f"m{i}"), f"k{i}") for i in range(95)])
    seen, cursor = [], None
    while True:
        page = await store.list_page(ALICE, cursor=cursor, limit=10)
        for m in page.memories:
            seen.append(m.id)
            assert await store.delete(ALICE, m.id)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [m.id for m in written] and await store.list(ALICE) == []


async def test_list_page_filters_statuses_before_paging(store):
    await store.put_many([(ALICE, mem(f"p{i}", status=Status.PENDING if i % 3 else Status.ACTIVE), f"k{i}") for i in range(30)])
    page = await store.list_page(ALICE, limit=100, statuses=frozenset({Status.ACTIVE}))
    assert len(page.memories) == 10 and all(m.status is Status.ACTIVE for m in page.memories) and page.next_cursor is None


async def test_a_cursor_cannot_be_used_on_another_scope_or_forged(store, tmp_path):
    await store.put_many([(ALICE, mem(f"a{i}"), f"k{i}") for i in range(5)])
    await store.put_many([(BOB, mem(f"b{i}"), f"k{i}") for i in range(5)])
    page = await store.list_page(ALICE, limit=2)
    assert page.next_cursor
    with pytest.raises(InvalidRequest, match="not issued for this scope"):
        await store.list_page(BOB, cursor=page.next_cursor)
    middle = len(page.next_cursor) // 2  # a middle character carries six bits of data, never padding
    tampered = page.next_cursor[:middle] + ("B" if page.next_cursor[middle] == "A" else "A") + page.next_cursor[middle + 1:]
    for forged in ("", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not base64 !!", tampered, "x" * 500, 7):
        with pytest.raises(InvalidRequest):
            await store.list_page(ALICE, cursor=forged)  # type: ignore[arg-type]
    other = LocalBackend(tmp_path / "other")
    await other.put_many([(ALICE, mem(f"a{i}"), f"k{i}") for i in range(5)])
    with pytest.raises(InvalidRequest):  # a cursor of another store (another key) is refused too
        await other.list_page(ALICE, cursor=page.next_cursor)
    await other.aclose()
    for bad_limit in (0, -1, 10_001, "10", True):
        with pytest.raises(InvalidRequest):
            await store.list_page(ALICE, limit=bad_limit)  # type: ignore[arg-type]


async def test_store_marker_names_the_store_and_counts_committed_writes(tmp_path):
    b = LocalBackend(tmp_path / "s")
    assert isinstance(b, StoreBinding)
    start = await b.store_marker()
    assert isinstance(start, StoreMarker) and start.writes == 0 and len(start.store_id) == 32
    m = await b.put(ALICE, mem("one"), idempotency_key="k1")
    await b.put(ALICE, mem("one"), idempotency_key="k1")  # retry: stores nothing, counts nothing
    await b.put_many([(ALICE, mem("two"), "k2"), (BOB, mem("three"), "k3")])
    with pytest.raises(BackendConflict):  # a batch that fails counts nothing
        await b.put_many([(ALICE, mem("four"), "k4"), (ALICE, mem("other"), "k1")])
    await b.update(ALICE, m.id, MemoryPatch(status=Status.SUPERSEDED))
    assert await b.delete(ALICE, m.id)
    assert not await b.delete(ALICE, m.id)  # nothing deleted: not a write
    assert (await b.store_marker()).writes == 5
    await b.aclose()
    again = LocalBackend(tmp_path / "s")
    assert await again.store_marker() == StoreMarker(start.store_id, 5)  # persisted, same id
    await again.aclose()
    other = LocalBackend(tmp_path / "t")
    assert (await other.store_marker()).store_id != start.store_id  # random per store
    await other.aclose()


def _write_forever(path: str) -> None:
    async def go() -> None:
        backend = LocalBackend(path)
        scope = ScopeKey.private("acme", "w")
        i = 0
        while True:
            stored = await backend.put_many([(scope, mem(f"item {i} {j}"), f"k{os.getpid()}-{i}-{j}") for j in range(3)])
            await backend.update(scope, stored[0].id, MemoryPatch(metadata={"updated": True}))
            i += 1

    asyncio.run(go())


def test_write_count_is_never_behind_the_data_after_kill_9(tmp_path):
    """The count is bumped inside the write's own transaction: after a kill -9 at any moment
    the store counts exactly the puts and updates it holds (rows + rows marked updated)."""
    path = str(tmp_path / "s")
    asyncio.run(LocalBackend(path).aclose())  # create the store
    ctx = multiprocessing.get_context("spawn")
    for round_ in range(3):
        proc = ctx.Process(target=_write_forever, args=(path,))
        proc.start()
        conn = sqlite3.connect(f"{path}/memories.sqlite3", timeout=30)
        deadline = time.monotonic() + 60
        target = (round_ + 1) * 30 + round_  # a different point in the write cycle each round
        while conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] < target and time.monotonic() < deadline:
            time.sleep(0.002)
        conn.close()
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)

    async def check() -> None:
        reopened = LocalBackend(path)
        scope = ScopeKey.private("acme", "w")
        rows = await reopened.list(scope, limit=10_000)
        updated = sum(1 for m in rows if m.metadata.get("updated"))
        marker = await reopened.store_marker()
        await reopened.aclose()
        assert len(rows) >= 90
        assert marker.writes == len(rows) + updated, (len(rows), updated, marker.writes)

    asyncio.run(check())
