"""The connections of `PgPool.read`: blocking ones, driven from worker threads, pipelined.

Why not the pool's async connections: psycopg's blocking wait is C code, its async wait puts a
reader on the event loop for every wait, and an async pipeline takes the connection's lock about
nine times a read. Measured on a recall's read (declare the ScopeSet, then one query, one round
trip): 0.33 ms of client CPU on a blocking connection, 0.56 ms on an async one; the hop from the
caller's loop to another thread costs the same either way (~0.09 ms). A read is short and
bounded, so holding a worker thread for it costs nothing the pool's loop thread would not.

One read = one connection from the pool, every statement queued in pipeline mode, then ONE Sync:
the connection is in autocommit, so PostgreSQL runs everything up to the Sync as one implicit
transaction. A `set_config(..., true)` (SET LOCAL) among the statements binds the ones after it
and ends with the Sync; an error aborts the rest of the read (PostgreSQL skips to the Sync).
Without pipeline support in libpq (before 14) the statements run one after another in an
explicit transaction: the same semantics, more round trips. A read that fails because its
connection was dropped by the server while idle is tried once more on another connection.

What it must never do: let a setting outlive its read (the next read on the connection would
inherit it), or run the statements of one read in two transactions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, LiteralString, cast

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

__all__ = ["PgReader"]

Rows = list[list[tuple[Any, ...]]]


def _has_rows(cur: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> bool:
    """Whether a statement returned rows (read from its result's status: `description` would
    build an object per column)."""
    return cur.pgresult is not None and cur.pgresult.status == psycopg.pq.ExecStatus.TUPLES_OK


class PgReader:
    """Blocking connections (`max_size`, opened on the first read, in a worker) and the worker
    threads that drive them; `submit` returns a future of the rows of each statement."""

    def __init__(self, url: str, *, schema: str, max_size: int, timeout: float, name: str,
                 configure: Callable[[psycopg.Connection[Any]], None] | None = None) -> None:
        self.schema = schema
        self._extra_configure = configure
        self._workers = ThreadPoolExecutor(max_workers=max_size, thread_name_prefix=f"pg-read {name}")
        self._pool = ConnectionPool(url, min_size=1, max_size=max_size, timeout=timeout, open=False,
                                    kwargs={"autocommit": True}, configure=self._configure)
        self._open_lock = threading.Lock()
        self._opened = False

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(sql.SQL("SET search_path TO {}, pg_catalog").format(sql.Identifier(self.schema)))
        if self._extra_configure is not None:
            self._extra_configure(conn)

    def submit(self, statements: Sequence[tuple[str, Any]]) -> Future[Rows]:
        return self._workers.submit(self.read, statements)

    def read(self, statements: Sequence[tuple[str, Any]]) -> Rows:
        """The read, in the calling thread (a worker of `submit`'s, or a blocking caller's own)."""
        if not self._opened:
            with self._open_lock:
                if not self._opened:
                    self._pool.open(wait=False)  # connecting happens in the pool's workers; getconn waits for one
                    self._opened = True
        with self._pool.connection() as conn:
            try:
                return _read_on(conn, statements)
            except psycopg.OperationalError:
                # a connection the server dropped while it sat idle (a restart, an outage) fails
                # its first use: a read changes nothing, so it is tried once more, below, on
                # another connection (the pool discards the broken one); any other error stands
                if not conn.broken:
                    raise
        with self._pool.connection() as conn:
            return _read_on(conn, statements)

    def close(self) -> None:
        self._workers.shutdown(wait=True, cancel_futures=True)
        self._pool.close(timeout=5)


def _read_on(conn: psycopg.Connection[Any], statements: Sequence[tuple[str, Any]]) -> Rows:
    if not psycopg.Pipeline.is_supported():
        with conn.transaction():
            return [_rows(conn.execute(_ours(text), params)) for text, params in statements]
    with conn.pipeline():
        cursors = [conn.execute(_ours(text), params) for text, params in statements]
    # leaving the block sends the one Sync (ending the implicit transaction) and brings every
    # result, raising a statement's error; a `pipeline.sync()` inside it would send a second Sync
    # and wait for a second reply
    return [_rows(cur) for cur in cursors]


def _ours(text: str) -> LiteralString:
    """The statements are the callers' own code, built from fixed fragments (values travel as
    parameters): typed as the literal SQL psycopg asks for, as `identity.storage.postgres.as_query`
    does (that module imports this one, so it cannot be imported from here)."""
    return cast(LiteralString, text)


def _rows(cur: psycopg.Cursor[Any]) -> list[tuple[Any, ...]]:
    return cur.fetchall() if _has_rows(cur) else []
