"""Storage-quota counters (SQLite: BEGIN IMMEDIATE, one writer at a time across processes); the guarantees are `UsageLedger`'s in `bridge/state/protocols.py`."""

from __future__ import annotations

from typing import Any

from bridge.state.common import check_quota
from bridge.state.records import QuotaLimits, Usage
from bridge.state.protocols import TENANT_ROW
from identity.storage.migrations import apply_migrations


USAGE_MIGRATIONS: tuple[str, ...] = (
    "CREATE TABLE usage (tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, memories INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " PRIMARY KEY (tenant_id, user_id))",
)


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
                check_quota(level, held, need, limits, tenant_id, user_id)  # raises -> the transaction rolls back
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

    async def of_tenant(self, tenant_id: str) -> dict[str, Usage]:
        return {user: Usage(m, b) for user, m, b in self.db.query("SELECT user_id, memories, bytes FROM usage WHERE tenant_id = ?", (tenant_id,))}
