"""The two shapes every PostgreSQL state query takes: rows fetched, or rows changed — each run on
the shared pool, so a lost connection is retried (or mapped to a typed error) in one place.

A fetch is a lone SELECT: it goes through `PgPool.read`, one round trip in an implicit
transaction, where a `run` would add BEGIN and COMMIT round trips around it (a lone lookup took
~0.9 ms of wall time that way on the test server at load 3, ~0.3 ms as a read)."""

from __future__ import annotations

from typing import Any, Sequence

import psycopg

from identity.storage.postgres import PgPool, as_query

__all__ = ["Conn", "fetch", "count"]


Conn = psycopg.AsyncConnection


async def fetch(pool: PgPool, text: str, params: Sequence[Any], what: str) -> list[tuple[Any, ...]]:
    (rows,) = await pool.read([(text, params)], what)
    return rows


async def count(pool: PgPool, text: str, params: Sequence[Any], what: str) -> int:
    async def run(conn: Conn) -> int:
        return (await conn.execute(as_query(text), params)).rowcount

    return await pool.run(run, what)
