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
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from bridge.state.common import check_audit_action
from bridge.state.read_rows import ReadRowQueue
from bridge.state.records import READ_ACTIONS
from bridge.state.sqlite.database import Database
from identity.model import MemoryIdentity

__all__ = ["ReadRowQueue", "GroupCommittedReads"]


class GroupCommittedReads:
    """The audit log's side of the queue (`SqliteAuditLog` is one): `append_read`, `flush`, and
    `_transaction`, which every transaction that inserts audit rows goes through."""

    db: Database
    _reads: ReadRowQueue | None

    if TYPE_CHECKING:  # provided by the audit log this is mixed into
        def _row(self, identity: MemoryIdentity, action: str, memory_ids: Iterable[str], scopes: Iterable[object],
                 grant_ids: Iterable[str | None], detail: dict[str, Any] | None) -> tuple: ...

        @staticmethod
        def _insert(conn: sqlite3.Connection, row: tuple) -> int: ...

        async def append(self, identity: MemoryIdentity, action: str, **fields: Any) -> int: ...

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

    async def append_read(
        self,
        identity: MemoryIdentity,
        action: str,
        *,
        memory_ids: Iterable[str] = (),
        scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (),
        detail: dict[str, Any] | None = None,
    ) -> int | None:
        """The row of a read (`READ_ACTIONS`): queued for the next group commit, returning None;
        committed now, returning its seq, when the queue is off. A full queue is committed by
        this call, and its failure is this call's error."""
        check_audit_action(action)
        if self._reads is None or action not in READ_ACTIONS:
            return await self.append(identity, action, memory_ids=memory_ids, scopes=scopes, grant_ids=grant_ids, detail=detail)
        row = self._row(identity, action, memory_ids, scopes, grant_ids, detail)
        with self.db.lock:
            if self._reads.add(row):
                self.flush()
        return None

