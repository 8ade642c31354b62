"""Storage-quota counters (PostgreSQL: the tenant and user counter rows locked FOR UPDATE, tenant row first so two writers never deadlock); the guarantees are `UsageLedger`'s in `bridge/state/protocols.py`."""

from __future__ import annotations

from typing import Any

from bridge.state.common import check_quota
from bridge.state.records import QuotaLimits, Usage
from bridge.state.protocols import TENANT_ROW


PG_USAGE_MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("usage", ("""
        CREATE TABLE usage (tenant_id text NOT NULL, user_id text NOT NULL, memories bigint NOT NULL CHECK (memories >= 0),
            bytes bigint NOT NULL CHECK (bytes >= 0), PRIMARY KEY (tenant_id, user_id));
        GRANT SELECT, INSERT, UPDATE ON usage TO {runtime};
    """,)),
)


class PgUsage:
    """Counters on the shared PostgreSQL state: every replica reserves against the same rows."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        async def run(conn: Any) -> None:
            for uid, level, limits in ((TENANT_ROW, "tenant", tenant), (user_id, "user", user)):  # tenant row first: one lock order
                await conn.execute("INSERT INTO usage VALUES (%s, %s, 0, 0) ON CONFLICT DO NOTHING", (tenant_id, uid))
                row = await (await conn.execute("SELECT memories, bytes FROM usage WHERE tenant_id = %s AND user_id = %s FOR UPDATE", (tenant_id, uid))).fetchone()
                check_quota(level, Usage(int(row[0]), int(row[1])), need, limits, tenant_id, user_id)  # raises -> rollback
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

    async def of_tenant(self, tenant_id: str) -> dict[str, Usage]:
        async def run(conn: Any) -> Any:
            return await (await conn.execute("SELECT user_id, memories, bytes FROM usage WHERE tenant_id = %s", (tenant_id,))).fetchall()

        return {user: Usage(int(m), int(b)) for user, m, b in await self.pool.run(run, "usage counters")}
