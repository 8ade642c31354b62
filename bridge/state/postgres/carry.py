"""Audit rows moving between states, on PostgreSQL: the export of one tenant's rows whole, and
the import of rows carried from another state, exactly once.

As on SQLite (bridge/state/sqlite/carry.py), `audit_carried` records (origin, origin seq) -> seq
in the same transaction as the rows; the batch first takes a transaction-scoped advisory lock on
its origin, so two imports of one origin at once (two operators, or a retried batch racing its
first try) never both see a row as missing. The runtime role may SELECT and INSERT that table,
nothing else; the append-only `audit` table is untouched.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from bridge.state.common import carried_detail, check_audit_action, not_yet_carried
from bridge.state.postgres.queries import Conn, fetch
from bridge.state.records import AuditEvent, AuditRecord
from identity.storage.postgres import PgPool

__all__ = ["CARRY_PG_MIGRATION", "export_rows", "import_rows"]

CARRY_PG_MIGRATION: tuple[str, tuple[str, ...]] = ("audit_carried", ("""
    CREATE TABLE audit_carried (
        origin text NOT NULL, origin_seq bigint NOT NULL, tenant_id text NOT NULL, seq bigint NOT NULL,
        PRIMARY KEY (origin, origin_seq));
    GRANT SELECT, INSERT ON audit_carried TO {runtime};
""",))

_COLUMNS = "seq, ts, tenant_id, actor, session_id, action, memory_ids, scopes, grant_ids, detail, user_id, actor_fingerprint"
_INSERT = (
    "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq"
)


def _record(row: Sequence[Any]) -> AuditRecord:
    seq, ts, tenant, actor, session, action, mids, scopes, grants, detail, user, fingerprint = row
    return AuditRecord(AuditEvent(int(seq), ts, tenant, actor, session, action, tuple(mids), tuple(scopes), tuple(grants), json.loads(detail)), user, fingerprint)


async def export_rows(pool: PgPool, tenant_id: str, after_seq: int, limit: int) -> list[AuditRecord]:
    rows = await fetch(pool, f"SELECT {_COLUMNS} FROM audit WHERE tenant_id = %s AND seq > %s ORDER BY seq LIMIT %s", (tenant_id, after_seq, limit), "audit log")
    return [_record(r) for r in rows]


async def import_rows(pool: PgPool, rows: Sequence[AuditRecord], origin: str) -> int:
    for row in rows:
        check_audit_action(row.event.action)
    if not rows:
        return 0
    lock = int.from_bytes(hashlib.blake2b(f"viking-bridge/carried/{origin}".encode(), digest_size=8).digest(), "big", signed=True)

    async def run(conn: Conn) -> int:
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        found = await (await conn.execute(
            "SELECT origin_seq FROM audit_carried WHERE origin = %s AND origin_seq = ANY(%s)", (origin, sorted({r.event.seq for r in rows})),
        )).fetchall()
        fresh = not_yet_carried(rows, [int(s) for (s,) in found])
        if not fresh:
            return 0
        params = [
            (e.ts, e.tenant_id, e.actor, row.user_id, row.actor_fingerprint, e.session_id, e.action, list(e.memory_ids), list(e.scopes),
             list(e.grant_ids), json.dumps(carried_detail(e.detail, origin, e.seq), ensure_ascii=False, default=str))
            for row in fresh for e in (row.event,)
        ]
        seqs: list[int] = []
        async with conn.cursor() as cur:  # one pipelined round of inserts, each seq read back in order
            await cur.executemany(_INSERT, params, returning=True)
            while True:
                seqs.append(int((await cur.fetchone())[0]))  # type: ignore[index]
                if not cur.nextset():
                    break
            await cur.executemany("INSERT INTO audit_carried VALUES (%s, %s, %s, %s)",
                                  [(origin, row.event.seq, row.event.tenant_id, seq) for row, seq in zip(fresh, seqs, strict=True)])
        return len(fresh)

    return await pool.run(run, "audit log")
