"""The PostgreSQL state's side of the group commit of read rows (`bridge/state/read_rows.py`
states the rule: what triggers a commit, what is durable when a recall returns, what a failure
does).

Why: with the PostgreSQL state every recall waited for one transaction on the server (BEGIN,
SET LOCAL synchronous_commit = off, INSERT, COMMIT: a few round trips through the pool's thread)
before it returned. Queued, the rows of up to `max_rows` recalls go to the server in ONE
transaction (`executemany`, pipelined), off the recall's path.

Durability here: a group commit of read rows only is committed with `synchronous_commit = off`,
as each read row was before, so a server crash can still lose read rows it acknowledged in the
last moments; rows carried by a write's transaction commit with that write's durability.
`fsync_reads=True` or `defer_reads=False` turns the queue off: each read row is then committed
before the recall returns, as before.

Ordering across the pool: a transaction runs on the pool's own thread, so the rows a transaction
carries stay queued ("in flight") until it ends; a second transaction that would carry queued
rows first waits for that one to end (committed: the rows leave; failed: they are still first in
the queue, and the second transaction carries them). So seq order stays this process's order even
when a commit fails, at the price that, while read rows are queued, the audited writes of one
process commit one after another. A caller cancelled mid-commit does not cancel the commit (it
runs as its own task); only a loop torn down under it (asyncio.run ending with a commit in flight)
leaves its outcome unknown, and then the rows are retried: a read row may appear twice, never not
at all.

What it must never do: let two transactions carry the same queued row, or block the event loop a
commit in flight needs (`claim_now` refuses to wait for its own thread's commit).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Callable

import psycopg

from bridge.state.read_rows import ReadRowQueue

__all__ = ["PgReadRows", "insert_reads", "INSERT_READ"]

INSERT_READ = (
    "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


async def insert_reads(conn: psycopg.AsyncConnection, rows: list[tuple]) -> None:
    """Insert queued read rows, in queue order, in the caller's transaction (one pipelined batch)."""
    async with conn.cursor() as cursor:
        await cursor.executemany(INSERT_READ, rows)


class PgReadRows(ReadRowQueue):
    """The queue with its transaction in flight. The queue is touched from the callers' loops and
    at exit, so every change is under `_mutex` (never held across an await)."""

    def __init__(self, flush: Callable[[], Any], *, flush_at_exit: Callable[[], None], **bounds: Any) -> None:
        super().__init__(flush, flush_at_exit=flush_at_exit, **bounds)
        self._mutex = threading.Lock()
        #: set when the transaction carrying the first `_carried` rows ends (None: none in flight)
        self._in_flight: concurrent.futures.Future[None] | None = None
        self._carrier_thread = 0

    def add(self, row: tuple) -> bool:
        with self._mutex:
            return super().add(row)

    def _take(self) -> tuple[int, concurrent.futures.Future[None] | None]:
        """(how many rows the caller's transaction carries, 0 if none; or the transaction to wait for)."""
        with self._mutex:
            if self._in_flight is not None:
                return 0, self._in_flight
            if not self.rows:
                return 0, None
            self._in_flight = concurrent.futures.Future()
            self._carrier_thread = threading.get_ident()
            return len(self.rows), None

    async def claim(self) -> int:
        """How many queued rows (the first ones) the caller's transaction must insert first, after
        any transaction already carrying rows has ended; 0: none. A claim of more than 0 must be
        ended with `release`."""
        while True:
            count, wait = self._take()
            if wait is None:
                return count
            await asyncio.wrap_future(wait)

    def claim_now(self, timeout: float) -> int | None:
        """`claim` for a blocking caller (close, exit); None when a transaction in flight cannot
        be waited for: it was started from this thread (whose loop must run to end it) or did not
        end within `timeout`."""
        while True:
            count, wait = self._take()
            if wait is None:
                return count
            if self._carrier_thread == threading.get_ident():
                return None
            try:
                wait.result(timeout)
            except concurrent.futures.TimeoutError:
                return None

    def release(self, count: int, *, committed: bool) -> None:
        """End a claim: committed rows leave the queue; otherwise they stay first in it."""
        with self._mutex:
            done, self._in_flight = self._in_flight, None
            if committed:
                self.committed(count)
        if done is not None:
            done.set_result(None)
