"""One way to open the bridge's own SQLite file (audit, grants, manifests): WAL + fsync on commit."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Iterator

from identity.storage import connect_durable


class Database:
    """A serialised connection; `transaction()` is BEGIN IMMEDIATE ... COMMIT/ROLLBACK."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.conn = connect_durable(self.path, busy_timeout_s=busy_timeout_s)
        self.lock = threading.RLock()

    @contextlib.contextmanager
    def transaction(self, *, fsync: bool = True) -> Iterator[sqlite3.Connection]:
        """`fsync=False` commits to the WAL without waiting for the disk (survives a process
        crash, not a power loss); the next fsynced commit makes it durable too."""
        with self.lock:
            if not fsync:
                self.conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute("COMMIT")
            finally:
                if not fsync:
                    self.conn.execute("PRAGMA synchronous=FULL")

    def query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def executescript(self, script: str) -> None:
        with self.transaction() as conn:
            for statement in filter(None, (s.strip() for s in script.split(";\n"))):
                conn.execute(statement)

    def close(self) -> None:
        with self.lock:
            self.conn.close()
