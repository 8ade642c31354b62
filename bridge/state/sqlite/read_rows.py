"""The SQLite state's side of the group commit of read rows (`bridge/state/read_rows.py` states
the rule: what triggers a commit, what is durable when a recall returns, what a failure does).

Why: one SQLite transaction per recall (BEGIN IMMEDIATE, an insert into an indexed append-only
table, COMMIT to the WAL) was about 80-130 us of a ~1 ms local recall — the largest single step
after the search itself.

Durability here: a queued row reaches the database file within `max_delay_s` (or `max_rows`
recalls); it is committed to the WAL without an fsync, like every read row (`fsync_reads=False`),
so after its commit a power loss can still lose it until the next fsynced commit. A row of a
state-changing action is committed and fsynced before that action returns, exactly as without
the queue. `fsync_reads=True` or `defer_reads=False` turns the queue off: each read row is then
committed before the recall returns, as before. A group commit fails on a full disk or a file
locked past its busy timeout.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING, Iterator

from bridge.state.read_rows import QueuedReads, ReadRowQueue
from bridge.state.sqlite.database import Database

__all__ = ["ReadRowQueue", "GroupCommittedReads"]


class GroupCommittedReads(QueuedReads):
    """The audit log's side of the queue (`SqliteAuditLog` is one): `append_read`, `flush`, and
    `_transaction`, which every transaction that inserts audit rows goes through."""

    db: Database
    _reads: ReadRowQueue | None

    if TYPE_CHECKING:  # provided by the audit log this is mixed into
        @staticmethod
        def _insert(conn: sqlite3.Connection, row: tuple) -> int: ...

    @contextlib.contextmanager
    def _transaction(self, *, fsync: bool = True) -> Iterator[sqlite3.Connection]:
        """`Database.transaction` that first inserts every queued read row: they commit with this
        transaction (and leave the queue only if it commits), so seq order is this process's order."""
        with self.db.lock:
            count = 0
            with self.db.transaction(fsync=fsync) as conn:
                if self._reads is not None and self._reads.rows:
                    count = self._reads.insert_into(conn, self._insert)
                yield conn
            if count:
                self._reads.committed(count)  # type: ignore[union-attr]

    def flush(self) -> None:
        """Commit the queued read rows now (one transaction, no fsync)."""
        if self._reads is not None and self._reads.rows:
            with self._transaction(fsync=False):
                pass

    async def _queue_read(self, row: tuple) -> None:
        with self.db.lock:
            if self._reads.add(row):  # type: ignore[union-attr]
                self.flush()
