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
from typing import Any, Awaitable, Callable, TypeVar

import psycopg

from bridge.state.read_rows import QueuedReads, ReadRowQueue
from identity.storage.postgres import PgPool

__all__ = ["PgReadRows", "PgGroupCommittedReads", "insert_reads", "INSERT_AUDIT_ROW"]

T = TypeVar("T")
Conn = psycopg.AsyncConnection
#: how long a blocking flush (close, exit) waits for a group commit another thread has in flight
_CLOSE_WAIT_S = 15.0

#: one audit row, of any action (the state's appends add RETURNING seq to it; a group commit of reads does not need the seq)
INSERT_AUDIT_ROW = (
    "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


async def insert_reads(conn: psycopg.AsyncConnection, rows: list[tuple]) -> None:
    """Insert queued read rows, in queue order, in the caller's transaction: one statement per row
    (so seq follows the queue), sent as one pipelined batch."""
    async with conn.cursor() as cursor:
        await cursor.executemany(INSERT_AUDIT_ROW, rows)


async def _reads_only(conn: psycopg.AsyncConnection, rows: list[tuple]) -> None:
    """A group commit of read rows alone: as lazily durable as each read row was before."""
    await conn.execute("SET LOCAL synchronous_commit = off")
    await insert_reads(conn, rows)


class PgReadRows(ReadRowQueue):
    """The queue with its transaction in flight. The queue is touched from the callers' loops and
    at exit, so every change is under `_mutex` (never held across an await)."""

    def __init__(self, flush: Callable[[], Any], *, flush_at_exit: Callable[[], None], **bounds: Any) -> None:
        super().__init__(flush, flush_at_exit=flush_at_exit, **bounds)
        self._mutex = threading.Lock()
        #: set when the transaction carrying the first queued rows ends (None: none in flight)
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
            # shielded: a waiter cancelled must not cancel the marker every other waiter waits on
            await asyncio.shield(asyncio.wrap_future(wait))

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
        if done is not None and not done.done():
            done.set_result(None)


class PgGroupCommittedReads(QueuedReads):
    """The audit log's side of the queue (`PgAuditLog` is one): `append_read`, `aflush`, `flush`,
    and `_carrying`, which every transaction that inserts audit rows goes through."""

    pool: PgPool
    _reads: PgReadRows | None

    async def _carrying(self, fn: Callable[[Conn], Awaitable[T]] | None) -> T | None:
        """`pool.run(fn)` in a transaction that first inserts this process's queued read rows
        (fn None: only those, with `synchronous_commit = off`). The transaction runs as its own
        task, so a cancelled caller does not leave the queue unsure of what committed."""
        reads = self._reads
        carried = 0 if reads is None else await reads.claim()
        if not carried:
            return None if fn is None else await self.pool.run(fn, "audit log")
        assert reads is not None
        rows = reads.rows[:carried]

        async def run(conn: Conn) -> T | None:
            if fn is None:
                return await _reads_only(conn, rows)
            await insert_reads(conn, rows)
            return await fn(conn)

        async def commit() -> T | None:
            try:
                result = await self.pool.run(run, "audit log")
            except BaseException:
                reads.release(carried, committed=False)
                raise
            reads.release(carried, committed=True)
            return result

        return await asyncio.shield(asyncio.ensure_future(commit()))

    async def aflush(self) -> None:
        """Commit the queued read rows now (one transaction, `synchronous_commit = off`), after
        any group commit already in flight."""
        if self._reads is not None:
            await self._carrying(None)

    def flush(self) -> None:
        """`aflush` for a blocking caller (close, exit): rows a transaction of this thread's own
        event loop has in flight cannot be waited for here and are left to it (`aclose` waits)."""
        reads = self._reads
        if reads is None or not reads.rows:
            return
        carried = reads.claim_now(_CLOSE_WAIT_S)
        if not carried:
            return
        rows = reads.rows[:carried]
        try:
            self.pool.run_sync(lambda conn: _reads_only(conn, rows), "audit log")
        except BaseException:
            reads.release(carried, committed=False)
            raise
        reads.release(carried, committed=True)

    async def _queue_read(self, row: tuple) -> None:
        if self._reads.add(row):  # type: ignore[union-attr]
            await self.aflush()

    async def _run(self, fn: Callable[[Conn], Awaitable[int]]) -> int:
        seq = await self._carrying(fn)
        assert seq is not None
        return seq
