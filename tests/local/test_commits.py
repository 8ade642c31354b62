"""The cross-process check before a search is skipped only while no connection has committed:
the WAL-index header's stamp (identity/storage/commits.py). Counted by calls of the full check
(no timing); the partition invalidation tests hold what a full check must find."""

from __future__ import annotations

import sqlite3
import struct
import sys

from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.local import LocalBackend
from identity.storage.commits import HEADER_BYTES, WAL_INDEX_VERSION, CommitWatch, header_stamp
from adapters.scopes import ScopeKey, ScopeSet

A = ScopeKey.workspace("acme", "alpha")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV)


def _header(change: int, *, version: int = WAL_INDEX_VERSION, init: int = 1) -> bytes:
    order = "<" if sys.byteorder == "little" else ">"
    return struct.pack(order + "IIIBBHIIIIIIII", version, 0, change, init, 0, 4096, 7, 2, 1, 2, 3, 4, 5, 6)


def test_a_header_is_a_stamp_only_when_both_copies_agree_on_a_known_valid_format():
    good = _header(5)
    assert len(good) == HEADER_BYTES and header_stamp(good + good) == good
    assert header_stamp(good + _header(6)) is None  # a commit being published: copies differ
    assert header_stamp(_header(5, version=3008000) * 2) is None  # another WAL-index format
    assert header_stamp(_header(5, init=0) * 2) is None  # not initialised
    assert header_stamp(good) is None  # one copy only


def test_the_stamp_moves_with_every_commit_of_any_connection(tmp_path):
    path = tmp_path / "db.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    watch = CommitWatch(path)
    before = watch.stamp()
    assert before is not None and watch.stamp() == before  # nothing committed: the same stamp
    writer.execute("INSERT INTO t VALUES (1)")
    after_insert = watch.stamp()
    assert after_insert not in (None, before)
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.execute("INSERT INTO t VALUES (2)")  # the log restarts: still a new stamp
    assert watch.stamp() not in (None, before, after_insert)
    watch.close()
    assert watch.stamp() is None


def test_no_shm_file_means_no_stamp(tmp_path):
    path = tmp_path / "db.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE t (x)")  # rollback journal: no WAL index
    assert CommitWatch(path).stamp() is None


def test_a_watch_made_before_the_file_holds_a_header_reads_it_once_it_does(tmp_path):
    path = tmp_path / "db.sqlite3"
    shm = tmp_path / "db.sqlite3-shm"
    shm.write_bytes(b"\0\0\0")  # as SQLite leaves it between truncating and writing the index
    watch = CommitWatch(path)
    assert watch.stamp() is None
    with open(shm, "r+b") as f:
        f.write(_header(5) * 2)
    assert watch.stamp() == _header(5)  # the same watch, once the header is there
    later = CommitWatch(path)  # another watch of the file shares the mapping
    assert later.stamp() == _header(5)
    watch.close()
    later.close()


async def test_a_search_skips_the_full_check_only_while_nothing_was_committed(tmp_path, monkeypatch):
    reader = LocalBackend(tmp_path / "s")
    writer = LocalBackend(tmp_path / "s")  # its own connection: its commits are foreign to `reader`
    await writer.put(A, mem("alpha one"), idempotency_key="one")
    full_checks = 0
    real = type(reader)._current_data_version

    def counted(self):
        nonlocal full_checks
        full_checks += self is reader  # the writer is another instance of the same class
        return real(self)

    monkeypatch.setattr(type(reader), "_current_data_version", counted)

    async def found() -> set[str]:
        return {h.memory.id for h in (await reader.search(SearchQuery(ScopeSet.of(A), "alpha", limit=10))).hits}

    assert len(await found()) == 1
    checks = full_checks
    assert checks >= 1  # the first look since open is a full one
    assert len(await found()) == 1 and len(await found()) == 1
    assert full_checks == checks  # no commit anywhere since: skipped
    second = await writer.put(A, mem("alpha two"), idempotency_key="two")
    assert second.id in await found()  # another connection's commit: checked in full, and seen
    assert full_checks > checks
    checks = full_checks
    assert len(await found()) == 2 and full_checks == checks  # and skipped again after it
    mine = await reader.put(A, mem("alpha three"), idempotency_key="three")
    checks = full_checks
    assert mine.id in await found()  # this process's own commit moves the stamp too: checked again
    assert full_checks > checks
    await reader.aclose()
    await writer.aclose()


async def test_without_a_stamp_every_search_checks_in_full(tmp_path, monkeypatch):
    reader = LocalBackend(tmp_path / "s")
    await reader.put(A, mem("alpha one"), idempotency_key="one")
    reader._commits.close()  # as if the store had no WAL index: the stamp is None
    calls = 0
    real = type(reader)._current_data_version

    def counted(self):
        nonlocal calls
        calls += 1
        return real(self)

    monkeypatch.setattr(type(reader), "_current_data_version", counted)
    for _ in range(3):
        await reader.search(SearchQuery(ScopeSet.of(A), "alpha", limit=10))
    assert calls == 3
    await reader.aclose()
