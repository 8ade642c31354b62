"""Group commit of the audit rows of reads (`recall`, `inspect`): queued in the process, committed
together, off the recall's critical path.

Why: one SQLite transaction per recall (BEGIN IMMEDIATE, an insert into an indexed append-only
table, COMMIT to the WAL) was about 80-130 us of a ~1 ms local recall — the largest single step
after the search itself. Queued rows are committed in ONE transaction by the next of:

- the queue reaching `max_rows` (the append that fills it commits them, so at most `max_rows`
  recalls are ever answered while their rows are only in memory);
- `max_delay_s` after the first queued row (a timer on the running event loop);
- any other audit row of this process (a write, a refusal, a guard alarm, a recovery): the
  queued rows go first, in the same transaction, so `seq` order is the order this process
  recalled and wrote in;
- an audit query or `has_rows` of this process (it reads its own recalls), and closing the state;
- interpreter exit (atexit), for a script that never closes its bridge.

What is durable when a recall returns, precisely: its audit row is in this process's memory,
with the time of the recall; it reaches the database file within `max_delay_s` (or `max_rows`
recalls), and a process crash before then loses it (and only queued read rows: never a row of a
state-changing action, which is committed and fsynced before that action returns, exactly as
without the queue). A queued row is committed to the WAL without an fsync, like every read row
(`fsync_reads=False`), so after its commit a power loss can still lose it until the next fsynced
commit. `fsync_reads=True` or `defer_reads=False` turns the queue off: each read row is then
committed before the recall returns, as before.

Failure: a group commit that fails (disk full, the file locked past its busy timeout) keeps the
rows queued and is retried by the next trigger; when the queue is full the recall that would
overflow it gets the storage error instead of an answer (fail closed: the process never answers
more than `max_rows` recalls it cannot audit).

What it must never do: drop a queued row without committing it, reorder rows of one process, or
hold a row of any action other than a read.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import sqlite3
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from bridge.state.common import check_audit_action
from bridge.state.records import READ_ACTIONS
from bridge.state.sqlite.database import Database
from identity.model import MemoryIdentity

log = logging.getLogger("viking_bridge")

__all__ = ["ReadRowQueue", "GroupCommittedReads"]

#: the default bounds of the queue: rows, and seconds after the first queued row
MAX_ROWS = 64
MAX_DELAY_S = 0.05


class ReadRowQueue:
    """Rows of reads waiting for their group commit. Every method is called under the state
    database's lock (`Database.lock`), so the queue and the transaction that drains it agree."""

    def __init__(self, flush: Callable[[], None], *, max_rows: int = MAX_ROWS, max_delay_s: float = MAX_DELAY_S) -> None:
        self.rows: list[tuple] = []
        self.max_rows, self.max_delay_s = max_rows, max_delay_s
        self._flush = flush
        self._timer: asyncio.TimerHandle | None = None
        ref = weakref.ref(self)
        atexit.register(_flush_at_exit, ref)

    def add(self, row: tuple) -> bool:
        """Queue one row; True when the queue is full and must be committed now."""
        self.rows.append(row)
        if len(self.rows) == 1 and self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a sync caller): the size bound, the next write or close commits it
                loop = None
            if loop is not None:
                self._timer = loop.call_later(self.max_delay_s, self._on_timer)
        return len(self.rows) >= self.max_rows

    def insert_into(self, conn: sqlite3.Connection, insert: Callable[[sqlite3.Connection, tuple], int]) -> int:
        """Insert every queued row inside the caller's transaction; returns how many. They leave
        the queue only when that transaction commits (`committed`)."""
        for row in self.rows:
            insert(conn, row)
        return len(self.rows)

    def committed(self, count: int) -> None:
        del self.rows[:count]
        if not self.rows and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self._flush()
        except Exception:  # kept queued; the next trigger retries, a full queue fails the recall
            log.exception("audit: group commit of %d read row(s) failed; they stay queued", len(self.rows))


def _flush_at_exit(ref: "weakref.ReferenceType[ReadRowQueue]") -> None:
    queue = ref()
    if queue is not None and queue.rows:
        try:
            queue._flush()
        except Exception:
            log.exception("audit: %d read row(s) could not be committed at exit", len(queue.rows))


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

