"""Audit rows moving between states, in the bridge's SQLite file: the export of one tenant's rows
whole, and the import of rows carried from another state, exactly once.

The exactly-once record is its own table, `audit_carried` (origin, origin seq) -> seq here, written
in the same BEGIN IMMEDIATE transaction as the rows it records: a migration killed mid-batch
leaves neither, a re-run skips every row a committed batch carried. The `audit` table itself is
untouched (append-only, as ever); the table is a migration of its own component (`audit_carried`).
"""

from __future__ import annotations

import json
from typing import Sequence

from bridge.state.common import carried_detail, check_audit_action, not_yet_carried
from bridge.state.records import AuditEvent, AuditRecord
from bridge.state.sqlite.database import Database

__all__ = ["CARRY_MIGRATIONS", "export_rows", "import_rows"]

CARRY_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE audit_carried (
        origin TEXT NOT NULL, origin_seq INTEGER NOT NULL, tenant_id TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (origin, origin_seq)
    );
    """,
)

_COLUMNS = "seq, ts, tenant_id, actor, session_id, action, memory_ids, scopes, grant_ids, detail, user_id, actor_fingerprint"


def export_rows(db: Database, tenant_id: str, after_seq: int, limit: int) -> list[AuditRecord]:
    rows = db.query(f"SELECT {_COLUMNS} FROM audit WHERE tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?", (tenant_id, after_seq, limit))
    return [
        AuditRecord(AuditEvent(seq, ts, tenant, actor, session, action, tuple(json.loads(m)), tuple(json.loads(s)), tuple(json.loads(g)), json.loads(d)), user, fingerprint)
        for seq, ts, tenant, actor, session, action, m, s, g, d, user, fingerprint in rows
    ]


def import_rows(db: Database, rows: Sequence[AuditRecord], origin: str) -> int:
    for row in rows:
        check_audit_action(row.event.action)
    if not rows:
        return 0
    with db.transaction() as conn:
        seqs = sorted({r.event.seq for r in rows})
        present = [s for (s,) in conn.execute(
            f"SELECT origin_seq FROM audit_carried WHERE origin = ? AND origin_seq IN ({','.join('?' * len(seqs))})", (origin, *seqs),
        ).fetchall()]
        fresh = not_yet_carried(rows, present)
        for row in fresh:
            e = row.event
            seq = conn.execute(
                "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (e.ts, e.tenant_id, e.actor, row.user_id, row.actor_fingerprint, e.session_id, e.action, json.dumps(list(e.memory_ids)),
                 json.dumps(list(e.scopes)), json.dumps(list(e.grant_ids)),
                 json.dumps(carried_detail(e.detail, origin, e.seq), ensure_ascii=False, default=str)),
            ).lastrowid
            conn.execute("INSERT INTO audit_carried VALUES (?, ?, ?, ?)", (origin, e.seq, e.tenant_id, seq))
        return len(fresh)
