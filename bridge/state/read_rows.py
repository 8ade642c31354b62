"""Group commit of the audit rows of reads (`recall`, `inspect`), the rule every state store that
defers them follows: rows queued in the process, committed together, off the recall's path.
The SQLite state (`bridge/state/sqlite/read_rows.py`) and the PostgreSQL state
(`bridge/state/postgres/read_rows.py`) each drain this queue inside their own transactions.

Queued rows are committed in ONE transaction by the next of:

- the queue reaching `max_rows` (the append that fills it commits them, so at most `max_rows`
  recalls are ever answered while their rows are only in memory);
- `max_delay_s` after the first queued row (a timer on the running event loop; with no loop, the
  size bound, the next audit row or closing commits them);
- any other audit row of this process (a write, a refusal, a guard alarm, a recovery): the
  queued rows go first, in the same transaction, so `seq` order is the order this process
  recalled and wrote in;
- an audit query, `has_rows` or an export of this process (it reads its own recalls), and
  closing the state;
- interpreter exit (atexit), for a script that never closes its bridge.

What is durable when a recall returns, precisely: its audit row is in this process's memory,
with the time of the recall; it reaches the database within `max_delay_s` (or `max_rows`
recalls), and a process crash before then loses it (and only queued read rows: never a row of a
state-changing action, which is committed before that action returns, exactly as without the
queue). Each store says how durable a committed read row is (neither waits for the disk).

Failure: a group commit that fails keeps the rows queued and is retried by the next trigger;
when the queue is full the recall that would overflow it gets the storage error instead of an
answer (fail closed: the process never answers more than `max_rows` recalls it cannot audit).

What it must never do: drop a queued row without committing it, reorder rows of one process, or
hold a row of any action other than a read.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import logging
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from bridge.state.common import check_audit_action
from bridge.state.records import READ_ACTIONS
from identity.model import MemoryIdentity

log = logging.getLogger("viking_bridge")

__all__ = ["ReadRowQueue", "QueuedReads", "MAX_ROWS", "MAX_DELAY_S"]

#: the default bounds of the queue: rows, and seconds after the first queued row
MAX_ROWS = 64
MAX_DELAY_S = 0.05

C = TypeVar("C")


class ReadRowQueue:
    """Rows of reads waiting for their group commit; a row leaves the queue only when the
    transaction that inserted it commits (`committed`). The store serialises the calls (SQLite:
    under its database lock; PostgreSQL: `PgReadRows`).

    `flush` commits the queue; the timer calls it, and when it returns an awaitable (an async
    store) runs that as a task on the timer's loop. `flush_at_exit` (default: `flush`) is the
    synchronous commit the atexit hook calls."""

    def __init__(self, flush: Callable[[], Any], *, flush_at_exit: Callable[[], None] | None = None,
                 max_rows: int = MAX_ROWS, max_delay_s: float = MAX_DELAY_S) -> None:
        self.rows: list[tuple] = []
        self.max_rows, self.max_delay_s = max_rows, max_delay_s
        self._flush = flush
        self._flush_at_exit = flush_at_exit or flush
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()  # async flushes the timer started (a task needs a reference)
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

    def insert_into(self, conn: C, insert: Callable[[C, tuple], object]) -> int:
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
            pending = self._flush()
        except Exception:  # kept queued; the next trigger retries, a full queue fails the recall
            log.exception("audit: group commit of %d read row(s) failed; they stay queued", len(self.rows))
            return
        if inspect.isawaitable(pending):
            task = asyncio.ensure_future(pending)
            self._tasks.add(task)
            task.add_done_callback(self._flushed)

    def _flushed(self, task: "asyncio.Task[Any]") -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("audit: group commit of %d read row(s) failed; they stay queued", len(self.rows), exc_info=task.exception())


def _flush_at_exit(ref: "weakref.ReferenceType[ReadRowQueue]") -> None:
    queue = ref()
    if queue is not None and queue.rows:
        try:
            queue._flush_at_exit()
        except Exception:
            log.exception("audit: %d read row(s) could not be committed at exit", len(queue.rows))


class QueuedReads:
    """`append_read`, the same for every store that defers read rows: the store's mixin says how a
    row is queued (`_queue_read`, which commits a full queue) and how any other row is appended."""

    _reads: ReadRowQueue | None

    if TYPE_CHECKING:  # provided by the audit log this is mixed into
        def _row(self, identity: MemoryIdentity, action: str, memory_ids: Iterable[str], scopes: Iterable[object],
                 grant_ids: Iterable[str | None], detail: dict[str, Any] | None) -> tuple: ...

        async def append(self, identity: MemoryIdentity, action: str, **fields: Any) -> int: ...

        async def _queue_read(self, row: tuple) -> None: ...

    async def append_read(
        self, identity: MemoryIdentity, action: str, *, memory_ids: Iterable[str] = (), scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (), detail: dict[str, Any] | None = None,
    ) -> int | None:
        """The row of a read (`READ_ACTIONS`): queued for the next group commit, returning None;
        committed now, returning its seq, when the queue is off. A full queue is committed by
        this call, and its failure is this call's error."""
        check_audit_action(action)
        if self._reads is None or action not in READ_ACTIONS:
            return await self.append(identity, action, memory_ids=memory_ids, scopes=scopes, grant_ids=grant_ids, detail=detail)
        await self._queue_read(self._row(identity, action, memory_ids, scopes, grant_ids, detail))
        return None
