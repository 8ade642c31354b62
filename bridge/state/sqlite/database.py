"""One way to open the bridge's own SQLite file (audit, grants, manifests): WAL + fsync on commit."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Iterator

from identity.storage.commits import CommitWatch
from identity.storage.sqlite import connect_durable, storage_error


class Database:
    """A serialised connection; `transaction()` is BEGIN IMMEDIATE ... COMMIT/ROLLBACK.

    Every SQLite failure leaves as a member of the error tree (`identity.storage.sqlite.storage_error`:
    a held lock or a full disk is `StorageUnavailable`, a damaged file `CorruptStorage` naming it).
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        try:
            self.conn = connect_durable(self.path, busy_timeout_s=busy_timeout_s)
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, "bridge state") from None
        self.lock = threading.RLock()
        self._synchronous = "FULL"  # connect_durable's mode; switched only when a commit needs another
        self._commits: CommitWatch | None = None  # mapped at the first `commit_stamp`, once the -shm file exists

    def commit_stamp(self) -> bytes | None:
        """Equal at two calls only if no connection committed to this file in between; None when
        that cannot be told (identity/storage/commits.py). Read it BEFORE the query whose result
        it vouches for, so a commit between the two changes the next stamp."""
        with self.lock:
            if self._commits is None:
                self._commits = CommitWatch(self.path)
            return self._commits.stamp()

    def _commit_mode(self, mode: str) -> None:
        if mode != self._synchronous:
            self.conn.execute(f"PRAGMA synchronous={mode}")
            self._synchronous = mode

    @contextlib.contextmanager
    def transaction(self, *, fsync: bool = True) -> Iterator[sqlite3.Connection]:
        """`fsync=False` commits to the WAL without waiting for the disk (survives a process
        crash, not a power loss); the next fsynced commit makes it durable too."""
        with self.lock:
            try:
                self._commit_mode("FULL" if fsync else "NORMAL")
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "bridge state") from None

    def query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "bridge state") from None

    def executescript(self, script: str) -> None:
        with self.transaction() as conn:
            for statement in filter(None, (s.strip() for s in script.split(";\n"))):
                conn.execute(statement)

    def close(self) -> None:
        with self.lock:
            if self._commits is None:
                self.conn.close()
            else:
                self._commits.close_with(self.conn)
