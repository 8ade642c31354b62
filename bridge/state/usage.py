"""What each tenant and user holds, for storage quotas: one counter row per tenant and per user.

`reserve` checks and adds in ONE transaction (SQLite: BEGIN IMMEDIATE, one writer at a time
across processes; PostgreSQL: the two counter rows locked FOR UPDATE, tenant row first so two
writers never deadlock), so concurrent writers — on one machine or on several replicas of one
PostgreSQL — can never both take the last slot: a write either fits (and is counted) or raises
`QuotaExceeded` having changed nothing. `release` gives space back (never below zero).

The counters are the bridge's own record of what it stored while quotas were configured: a
memory written before, or removed behind the bridge's back, is not in them. A write whose
backend call failed retryably stays counted (it may have landed; fail closed) until the memory
is forgotten or expires. The tenant's own row uses user id "" (ids are never empty).

Never decides who may write; `bridge.writes` asks, with the limits `bridge.quotas` resolved.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, runtime_checkable

from bridge.errors import QuotaExceeded
from bridge.quotas import QuotaLimits, Usage
from identity.storage.migrations import apply_migrations

__all__ = ["UsageLedger", "MemoryUsage", "SqliteUsage", "PgUsage", "USAGE_MIGRATIONS", "PG_USAGE_MIGRATIONS", "TENANT_ROW"]

TENANT_ROW = ""

USAGE_MIGRATIONS: tuple[str, ...] = (
    "CREATE TABLE usage (tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, memories INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " PRIMARY KEY (tenant_id, user_id))",
)
PG_USAGE_MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("usage", ("""
        CREATE TABLE usage (tenant_id text NOT NULL, user_id text NOT NULL, memories bigint NOT NULL CHECK (memories >= 0),
            bytes bigint NOT NULL CHECK (bytes >= 0), PRIMARY KEY (tenant_id, user_id));
        GRANT SELECT, INSERT, UPDATE ON usage TO {runtime};
    """,)),
)


@runtime_checkable
class UsageLedger(Protocol):
    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        """Add `need` to the tenant's and the user's counters if both stay within their limits;
        otherwise raise `QuotaExceeded` and change nothing."""
        ...

    async def release(self, tenant_id: str, user_id: str, freed: Usage) -> None: ...

    async def usage(self, tenant_id: str, user_id: str = TENANT_ROW) -> Usage: ...


def check(level: str, held: Usage, need: Usage, limits: QuotaLimits, tenant_id: str, user_id: str) -> None:
    """Raise `QuotaExceeded` if `held + need` breaks `limits` (the message names the quota)."""
    who = f"tenant {tenant_id}" if level == "tenant" else f"user {user_id} of tenant {tenant_id}"
    for measure, have, want, cap in (("memories", held.memories, need.memories, limits.max_memories), ("bytes", held.bytes, need.bytes, limits.max_bytes)):
        if cap is not None and have + want > cap:
            raise QuotaExceeded(
                f"storage quota exceeded: {who} holds {have} {measure} of {cap}; this write needs {want} more; nothing was written "
                "(forget memories, let them expire, or ask the operator to raise the quota)",
                level=level, measure=measure, used=have, requested=want, limit=cap,
            )


class MemoryUsage:
    """In-process counters (tests, the in-memory state); one asyncio lock makes reserve atomic."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Usage] = {}
        self._lock = asyncio.Lock()

    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        async with self._lock:
            rows = ((TENANT_ROW, "tenant", tenant), (user_id, "user", user))
            for uid, level, limits in rows:
                check(level, self._rows.get((tenant_id, uid), Usage()), need, limits, tenant_id, user_id)
            for uid, _, _ in rows:
                held = self._rows.get((tenant_id, uid), Usage())
                self._rows[(tenant_id, uid)] = Usage(held.memories + need.memories, held.bytes + need.bytes)

    async def release(self, tenant_id: str, user_id: str, freed: Usage) -> None:
        async with self._lock:
            for uid in (TENANT_ROW, user_id):
                held = self._rows.get((tenant_id, uid), Usage())
                self._rows[(tenant_id, uid)] = Usage(max(0, held.memories - freed.memories), max(0, held.bytes - freed.bytes))

    async def usage(self, tenant_id: str, user_id: str = TENANT_ROW) -> Usage:
        return self._rows.get((tenant_id, user_id), Usage())


class SqliteUsage:
    """Counters in the bridge's SQLite state file (`Database`: BEGIN IMMEDIATE transactions)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        with db.lock:
            apply_migrations(db.conn, "usage", USAGE_MIGRATIONS)

    def _reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        # No fsync of its own: the write intent that follows commits with fsync, and in WAL order
        # that makes this reservation durable too; a crash before it loses only a reservation
        # whose write never reached the backend (the put comes after the intent).
        with self.db.transaction(fsync=False) as conn:
            for uid, level, limits in ((TENANT_ROW, "tenant", tenant), (user_id, "user", user)):
                conn.execute("INSERT OR IGNORE INTO usage VALUES (?, ?, 0, 0)", (tenant_id, uid))
                held = Usage(*conn.execute("SELECT memories, bytes FROM usage WHERE tenant_id = ? AND user_id = ?", (tenant_id, uid)).fetchone())
                check(level, held, need, limits, tenant_id, user_id)  # raises -> the transaction rolls back
                conn.execute("UPDATE usage SET memories = memories + ?, bytes = bytes + ? WHERE tenant_id = ? AND user_id = ?",
                             (need.memories, need.bytes, tenant_id, uid))

    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        self._reserve(tenant_id, user_id, need, tenant, user)

    async def release(self, tenant_id: str, user_id: str, freed: Usage) -> None:
        with self.db.transaction(fsync=False) as conn:  # a release lost to a power cut over-counts: fail closed
            conn.executemany(
                "UPDATE usage SET memories = max(memories - ?, 0), bytes = max(bytes - ?, 0) WHERE tenant_id = ? AND user_id = ?",
                [(freed.memories, freed.bytes, tenant_id, uid) for uid in (TENANT_ROW, user_id)],
            )

    async def usage(self, tenant_id: str, user_id: str = TENANT_ROW) -> Usage:
        rows = self.db.query("SELECT memories, bytes FROM usage WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id))
        return Usage(*rows[0]) if rows else Usage()


class PgUsage:
    """Counters on the shared PostgreSQL state: every replica reserves against the same rows."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        async def run(conn: Any) -> None:
            for uid, level, limits in ((TENANT_ROW, "tenant", tenant), (user_id, "user", user)):  # tenant row first: one lock order
                await conn.execute("INSERT INTO usage VALUES (%s, %s, 0, 0) ON CONFLICT DO NOTHING", (tenant_id, uid))
                row = await (await conn.execute("SELECT memories, bytes FROM usage WHERE tenant_id = %s AND user_id = %s FOR UPDATE", (tenant_id, uid))).fetchone()
                check(level, Usage(int(row[0]), int(row[1])), need, limits, tenant_id, user_id)  # raises -> rollback
                await conn.execute("UPDATE usage SET memories = memories + %s, bytes = bytes + %s WHERE tenant_id = %s AND user_id = %s",
                                   (need.memories, need.bytes, tenant_id, uid))

        await self.pool.run(run, "usage counters")

    async def release(self, tenant_id: str, user_id: str, freed: Usage) -> None:
        async def run(conn: Any) -> None:
            for uid in (TENANT_ROW, user_id):
                await conn.execute("UPDATE usage SET memories = GREATEST(memories - %s, 0), bytes = GREATEST(bytes - %s, 0) WHERE tenant_id = %s AND user_id = %s",
                                   (freed.memories, freed.bytes, tenant_id, uid))

        await self.pool.run(run, "usage counters")

    async def usage(self, tenant_id: str, user_id: str = TENANT_ROW) -> Usage:
        async def run(conn: Any) -> Any:
            return await (await conn.execute("SELECT memories, bytes FROM usage WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id))).fetchone()

        row = await self.pool.run(run, "usage counters")
        return Usage(int(row[0]), int(row[1])) if row else Usage()


