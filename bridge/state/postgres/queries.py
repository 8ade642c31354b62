"""The two shapes every PostgreSQL state query takes: rows fetched, or rows changed — each run on
the shared pool, so a lost connection is retried (or mapped to a typed error) in one place."""

from __future__ import annotations

from typing import Any, Sequence

import psycopg

from identity.storage.postgres import PgPool, as_query

__all__ = ["Conn", "fetch", "count"]


Conn = psycopg.AsyncConnection


async def fetch(pool: PgPool, text: str, params: Sequence[Any], what: str) -> list[tuple[Any, ...]]:
    async def run(conn: Conn) -> list[tuple[Any, ...]]:
        return await (await conn.execute(as_query(text), params)).fetchall()

    return await pool.run(run, what)


async def count(pool: PgPool, text: str, params: Sequence[Any], what: str) -> int:
    async def run(conn: Conn) -> int:
        return (await conn.execute(as_query(text), params)).rowcount

    return await pool.run(run, what)
