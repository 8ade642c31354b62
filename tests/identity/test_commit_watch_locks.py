"""A CommitWatch never drops SQLite's locks on the `-shm` file (identity/storage/commits.py).

Closing any descriptor of a file drops every POSIX lock the process holds on it (fcntl(2)).
A watch that opened the `-shm` file and closed its descriptor at once left its process without
SQLite's locks there, the one that tells a process opening the database that others already use
the WAL index among them: the next process to open the database truncated the `-shm` file and
rebuilt the index under the first one (a child pytest session died of SIGBUS). These tests read
the process's locks from /proc/locks (Linux)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from identity.storage.commits import CommitWatch

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads the process's POSIX locks from /proc/locks (Linux)")


def _locks_on(path: Path, pid: int | None = None) -> list[str]:
    """This process's (or `pid`'s) POSIX locks on `path`: type and byte range, sorted."""
    inode, pid = os.stat(path).st_ino, pid or os.getpid()
    found = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter's line
            continue
        if fields[1] == "POSIX" and int(fields[4]) == pid and int(fields[5].rsplit(":", 1)[1]) == inode:
            found.append(f"{fields[3]} {fields[6]}-{fields[7]}")
    return sorted(found)


def _open_wal(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.execute("SELECT count(*) FROM t").fetchone()
    return conn


def test_watching_keeps_every_lock_sqlite_holds_on_the_shm_file(tmp_path):
    db = tmp_path / "w.sqlite3"
    conn = _open_wal(db)
    shm = Path(f"{db}-shm")
    held = _locks_on(shm)
    assert held, "SQLite holds its locks on the -shm file while the connection is open"
    first, second = CommitWatch(db), CommitWatch(db)
    assert first.stamp() is not None and first.stamp() == second.stamp()
    assert _locks_on(shm) == held
    first.close()  # another watch of the same file is open: its view stays
    conn.execute("INSERT INTO t VALUES (2)")
    assert _locks_on(shm) == held and second.stamp() is not None
    conn.close()
    second.close()  # the last one, after the connection: its descriptors go


def test_another_process_opening_the_database_finds_it_in_use_and_leaves_the_index_alone(tmp_path):
    db = tmp_path / "w.sqlite3"
    conn = _open_wal(db)
    watch = CommitWatch(db)
    before = watch.stamp()
    # SQLite's test at open: can this process lock byte 128 of the -shm file exclusively? Only the
    # first process to use the WAL index can, and it then truncates the file and rebuilds the index.
    probe = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128); print('free')\n"
        "except OSError:\n    print('in use')"
    )
    seen = subprocess.run([sys.executable, "-c", probe, f"{db}-shm"], capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert seen == "in use"
    write = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('INSERT INTO t VALUES (3)'); c.close()"
    subprocess.run([sys.executable, "-c", write, str(db)], check=True, timeout=60)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2  # this process reads on, seeing the write
    assert watch.stamp() != before
    conn.close()
    watch.close()


def test_no_shm_file_opens_nothing(tmp_path):
    db = tmp_path / "rollback.sqlite3"
    sqlite3.connect(db).close()
    watch = CommitWatch(db)
    assert watch.stamp() is None
    watch.close()


def test_a_watch_dropped_while_the_views_are_locked_closes_without_deadlock(tmp_path):
    """The collector may drop an unclosed watch on a thread inside another watch's `__init__`
    (holding the views' lock): its `__del__` must get the lock again, not wait for itself."""
    import threading

    from identity.storage import commits

    db = tmp_path / "w.sqlite3"
    conn = _open_wal(db)
    done = threading.Event()

    def drop_under_the_lock() -> None:
        with commits._VIEWS_LOCK:
            watch = CommitWatch(db)
            del watch  # its last reference: __del__ -> close() on this thread, lock held
        done.set()

    worker = threading.Thread(target=drop_under_the_lock, daemon=True)
    worker.start()
    worker.join(10)
    assert done.is_set(), "a watch closed under the views' lock waited for itself"
    conn.close()
