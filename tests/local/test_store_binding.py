"""A store that should exist is never silently replaced
by a new empty one, and the store's directory and files are private to their owner."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import stat

import pytest

from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.local import LocalBackend
from adapters.local.errors import CorruptStore
from adapters.scopes import ScopeKey, ScopeSet
from identity.errors import CorruptStorage

ALICE = ScopeKey.private("acme", "alice")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV)


async def _store_with_rows(path, n: int = 3) -> str:
    b = LocalBackend(path)
    await b.put_many([(ALICE, mem(f"acknowledged {i}"), f"k{i}") for i in range(n)])
    store_id = (await b.store_marker()).store_id
    await b.aclose()
    return store_id


async def test_a_deleted_store_directory_is_refused_when_a_store_is_expected(tmp_path):
    store_id = await _store_with_rows(tmp_path / "s")
    shutil.rmtree(tmp_path / "s")
    with pytest.raises(CorruptStore) as caught:
        LocalBackend(tmp_path / "s", expected_store_id=store_id)
    assert isinstance(caught.value, CorruptStorage) and str(tmp_path / "s") in str(caught.value)
    assert not (tmp_path / "s").exists()  # nothing was created in its place
    with pytest.raises(CorruptStore):
        LocalBackend(tmp_path / "s", expect_existing=True)


async def test_a_store_file_truncated_to_zero_bytes_is_refused_and_left_alone(tmp_path):
    store_id = await _store_with_rows(tmp_path / "s")
    db = tmp_path / "s" / "memories.sqlite3"
    db.write_bytes(b"")
    with pytest.raises(CorruptStore) as caught:
        LocalBackend(tmp_path / "s", expected_store_id=store_id)
    assert caught.value.path == str(db) and "empty" in str(caught.value)
    assert db.stat().st_size == 0  # not initialised into a fresh store behind our back


async def test_a_deleted_database_file_is_refused_and_a_wal_without_its_database_always_is(tmp_path):
    b = LocalBackend(tmp_path / "s")
    await b.put_many([(ALICE, mem(f"in the wal {i}"), f"k{i}") for i in range(3)])
    db = tmp_path / "s" / "memories.sqlite3"
    wal = db.with_name(db.name + "-wal")
    assert wal.stat().st_size > 0  # the commits still sit in the WAL while the store is open
    shutil.copy(wal, tmp_path / "wal-copy")
    await b.aclose()
    db.unlink()
    with pytest.raises(CorruptStore, match="missing"):
        LocalBackend(tmp_path / "s", expect_existing=True)
    shutil.copy(tmp_path / "wal-copy", wal)
    with pytest.raises(CorruptStore) as caught:  # even without an expectation: a WAL never outlives its database legitimately
        LocalBackend(tmp_path / "s")
    assert "-wal" in str(caught.value) and not db.exists()


async def test_another_store_in_the_same_place_is_refused(tmp_path):
    store_id = await _store_with_rows(tmp_path / "s")
    shutil.rmtree(tmp_path / "s")
    await _store_with_rows(tmp_path / "s")  # re-created: same path, same rows, another store
    with pytest.raises(CorruptStore) as caught:
        LocalBackend(tmp_path / "s", expected_store_id=store_id)
    assert store_id in str(caught.value) and caught.value.path.endswith("memories.sqlite3")
    reopened = LocalBackend(tmp_path / "s", expect_existing=True)  # it IS a store, just not that one
    await reopened.aclose()


async def test_a_foreign_sqlite_file_is_not_taken_for_the_expected_store(tmp_path):
    (tmp_path / "s").mkdir()
    conn = sqlite3.connect(tmp_path / "s" / "memories.sqlite3")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptStore, match="holds no viking-bridge store"):
        LocalBackend(tmp_path / "s", expect_existing=True)
    tables = {r[0] for r in sqlite3.connect(tmp_path / "s" / "memories.sqlite3").execute("SELECT name FROM sqlite_master")}
    assert tables == {"t"}  # the refusal rolled back: nothing was written into it


async def test_the_expected_store_opens_and_a_first_open_still_creates_one(tmp_path):
    store_id = await _store_with_rows(tmp_path / "s")
    b = LocalBackend(tmp_path / "s", expected_store_id=store_id)
    assert b.store_id == store_id and b.count() == 3
    await b.aclose()
    fresh = LocalBackend(tmp_path / "new")  # no expectation: a new, empty store, as before
    assert fresh.count() == 0
    await fresh.aclose()


async def test_a_schema_1_store_is_upgraded_in_place_and_keeps_its_rows(tmp_path):
    b = LocalBackend(tmp_path / "s")
    m = await b.put(ALICE, mem("written by schema 1"), idempotency_key="k")
    await b.aclose()
    conn = sqlite3.connect(tmp_path / "s" / "memories.sqlite3", isolation_level=None)
    for table in ("counters", "partition_version", "quarantine"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM meta WHERE key IN ('store_id', 'cursor_key')")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()
    upgraded = LocalBackend(tmp_path / "s", expect_existing=True)
    marker = await upgraded.store_marker()
    assert len(marker.store_id) == 32 and marker.writes == 0
    assert [h.memory.id for h in (await upgraded.search(SearchQuery(ScopeSet.of(ALICE), "schema 1"))).hits] == [m.id]
    await upgraded.aclose()
    again = LocalBackend(tmp_path / "s", expected_store_id=marker.store_id)  # the id it was given is kept
    await again.aclose()


async def test_store_directory_is_0700_and_its_files_0600_under_a_permissive_umask(tmp_path):
    old = os.umask(0o022)
    try:
        b = LocalBackend(tmp_path / "home" / "store")
        await b.put(ALICE, mem("private"), idempotency_key="k")
        store = tmp_path / "home" / "store"
        assert stat.S_IMODE(store.stat().st_mode) == 0o700
        files = [p for p in store.iterdir()]
        assert {p.name for p in files} >= {"memories.sqlite3", "memories.sqlite3-wal", "memories.sqlite3-shm"}
        for p in files:
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        await b.aclose()
    finally:
        os.umask(old)


async def test_a_wider_existing_store_directory_is_warned_about(tmp_path, caplog):
    wide = tmp_path / "wide"
    wide.mkdir()
    os.chmod(wide, 0o755)
    caplog.set_level(logging.WARNING)
    b = LocalBackend(wide)
    assert any("wide" in r.getMessage() and "0755" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert stat.S_IMODE((wide / "memories.sqlite3").stat().st_mode) == 0o600
    await b.aclose()


def _write_then_crash(path: str, queue) -> None:
    import asyncio

    async def go() -> None:
        b = LocalBackend(path)
        await b.put_many([(ALICE, mem(f"only in the wal {i}"), f"w{i}") for i in range(5)])
        queue.put((await b.store_marker()).writes)
        queue.close()
        queue.join_thread()  # the answer is out before the "crash"
        os._exit(0)  # a crash: no close, so no checkpoint; the commits live only in the WAL

    asyncio.run(go())


async def test_a_deleted_wal_loses_commits_silently_but_lowers_the_write_count(tmp_path):
    """What SQLite cannot detect (module docstring): deleting the WAL after a crash drops its
    commits without any error. The store opens; only `writes` below the recorded high-water
    mark gives it away, which is the comparison the bridge makes."""
    import multiprocessing

    path = tmp_path / "s"
    await _store_with_rows(path, n=2)  # checkpointed into the database file at close
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_write_then_crash, args=(str(path), queue))
    proc.start()
    recorded = queue.get(timeout=120)
    proc.join(60)
    wal = path / "memories.sqlite3-wal"
    assert recorded == 7 and wal.stat().st_size > 0
    wal.unlink()
    (path / "memories.sqlite3-shm").unlink(missing_ok=True)
    b = LocalBackend(path, expect_existing=True)  # opens without complaint: SQLite cannot tell
    marker = await b.store_marker()
    assert b.count() == 2 and marker.writes == 2 < recorded
    await b.aclose()


async def test_damaged_store_bookkeeping_is_corrupt_storage_not_a_type_error(tmp_path):
    await _store_with_rows(tmp_path / "s")
    conn = sqlite3.connect(tmp_path / "s" / "memories.sqlite3", isolation_level=None)
    conn.execute("UPDATE meta SET value = 'not hex' WHERE key = 'cursor_key'")
    conn.close()
    with pytest.raises(CorruptStore, match="cursor key"):
        LocalBackend(tmp_path / "s")
    conn = sqlite3.connect(tmp_path / "s" / "memories.sqlite3", isolation_level=None)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'cursor_key'", ("ab" * 32,))
    conn.execute("DELETE FROM counters WHERE name = 'writes'")
    conn.close()
    b = LocalBackend(tmp_path / "s")  # the INSERT OR IGNORE at open restores a missing counter at 0 ...
    assert (await b.store_marker()).writes == 0  # ... which the bridge's high-water mark then refuses
    b._db.execute("UPDATE counters SET value = 'x' WHERE name = 'writes'")
    with pytest.raises(CorruptStore, match="counter"):
        await b.store_marker()
    await b.aclose()
