"""A PostgreSQL advisory lock held across awaits on the caller's loop: one critical section for
every replica on one database.

Why: some backend steps are a read, a remote call and a write that must not interleave with the
same step on another replica (a Viking add sent once per memory id; one OpenViking key minted
per principal). An in-process asyncio lock covers one process only. The lock is transaction
scoped (`pg_advisory_xact_lock`) on a connection of a pool kept for locks alone, so a replica
that dies mid-step drops its lock with its connection, and a holder never waits for a
connection its own statements need (those use another pool).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

__all__ = ["lock_key", "advisory_hold"]


def lock_key(namespace: str, *parts: str) -> int:
    """A signed 64-bit advisory-lock key for `parts` (hashed: any text, no collisions by layout)."""
    text = "\x1f".join((namespace, *parts))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


@asynccontextmanager
async def advisory_hold(pool: Any, key: int, what: str) -> AsyncIterator[None]:
    """Hold `key` for the body of the `async with`; raises the pool's typed error when the
    database cannot be reached (never runs the body unlocked)."""
    acquired: concurrent.futures.Future[None] = concurrent.futures.Future()
    release: concurrent.futures.Future[None] = concurrent.futures.Future()

    async def hold(conn: Any) -> None:
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
        if not acquired.done():
            acquired.set_result(None)
        await asyncio.wrap_future(release)  # the transaction (and the lock) ends when the caller is done

    holder = asyncio.ensure_future(pool.run(hold, what))
    try:
        waiting = asyncio.wrap_future(acquired)
        done, _ = await asyncio.wait({holder, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting not in done:
            waiting.cancel()
            holder.result()  # the pool's error (unreachable, misconfigured)
            raise RuntimeError(f"{what}: the lock ended before it was taken")  # pragma: no cover
        yield
    finally:
        if not release.done():
            release.set_result(None)
        try:
            await holder
        except Exception:  # the body's outcome stands; a failed unlock ends with the connection
            pass
