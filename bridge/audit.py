"""The append-only audit log: every write, recall, forget, approval, grant and guard alarm.

Rows are never updated or deleted (SQLite triggers refuse it), and they hold ids, scopes and
grants — never memory content — so a forget-by-subject can remove every trace of a person's
data while the record that it happened remains. Tenant admins query their own tenant only.

Durability: rows of state-changing actions are fsynced before the action is acknowledged.
Rows of reads (`recall`) are committed to the WAL without waiting for the disk unless
`fsync_reads=True` (VIKING_BRIDGE_AUDIT_FSYNC_READS): they survive a process crash, and a
power loss can lose at most the read rows since the last fsynced commit. That fsync is the
largest single cost of a local recall (~0.3 ms), hence the choice.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Iterable

from bridge.errors import NotPermitted
from bridge.policy import ROLE_ADMIN
from bridge.sqlite import Database
from identity.model import MemoryIdentity

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    tenant_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    user_id TEXT NOT NULL,
    actor_fingerprint TEXT NOT NULL,
    session_id TEXT NOT NULL,
    action TEXT NOT NULL,
    memory_ids TEXT NOT NULL,
    scopes TEXT NOT NULL,
    grant_ids TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_tenant ON audit (tenant_id, seq);
CREATE INDEX IF NOT EXISTS audit_by_user ON audit (tenant_id, user_id, seq);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END
"""

ACTIONS = frozenset({"write", "recall", "forget", "forget_subject", "approve", "promote", "grant", "revoke", "inject", "guard_alarm", "capture", "denied"})


@dataclass(frozen=True)
class AuditEvent:
    seq: int
    ts: float
    tenant_id: str
    actor: str
    session_id: str
    action: str
    memory_ids: tuple[str, ...]
    scopes: tuple[str, ...]
    grant_ids: tuple[str, ...]
    detail: dict[str, Any]


class AuditLog:
    READ_ACTIONS = frozenset({"recall"})

    def __init__(self, db: Database, *, fsync_reads: bool = False) -> None:
        self.db = db
        self.fsync_reads = fsync_reads
        db.executescript(_SCHEMA)

    def append(
        self,
        identity: MemoryIdentity,
        action: str,
        *,
        memory_ids: Iterable[str] = (),
        scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (),
        detail: dict[str, Any] | None = None,
    ) -> int:
        if action not in ACTIONS:
            raise ValueError(f"unknown audit action {action!r}")
        fsync = self.fsync_reads or action not in self.READ_ACTIONS
        with self.db.transaction(fsync=fsync) as conn:
            cursor = conn.execute(
                "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    identity.tenant_id,
                    identity.principal,
                    identity.user_id,
                    identity.fingerprint,
                    identity.session_id,
                    action,
                    json.dumps(list(memory_ids)),
                    json.dumps(sorted({str(s) for s in scopes})),
                    json.dumps(sorted({g for g in grant_ids if g})),
                    json.dumps(detail or {}, ensure_ascii=False, default=str),
                ),
            )
            return int(cursor.lastrowid)

    def query(
        self,
        admin: MemoryIdentity,
        *,
        action: str | None = None,
        memory_id: str | None = None,
        since_seq: int = 0,
        limit: int = 100,
    ) -> list[AuditEvent]:
        """A tenant admin's view of their own tenant's log (a user sees only their own rows)."""
        sql = "SELECT seq, ts, tenant_id, actor, session_id, action, memory_ids, scopes, grant_ids, detail FROM audit WHERE tenant_id = ? AND seq > ?"
        params: list[object] = [admin.tenant_id, since_seq]
        if not admin.has_role(ROLE_ADMIN):
            # by user_id, never by the display principal (`tenant/user@agent` is ambiguous when
            # ids contain `@`): a user sees the rows of all of their own agents, nobody else's
            sql += " AND user_id = ?"
            params.append(admin.user_id)
        if action is not None:
            if action not in ACTIONS:
                raise NotPermitted(f"unknown audit action {action!r}")
            sql += " AND action = ?"
            params.append(action)
        if memory_id is not None:
            sql += " AND instr(memory_ids, ?) > 0"  # JSON-quoted: matches whole ids only
            params.append(json.dumps(memory_id))
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        events = [
            AuditEvent(seq, ts, tenant, actor, session, act, tuple(json.loads(m)), tuple(json.loads(s)), tuple(json.loads(g)), json.loads(d))
            for seq, ts, tenant, actor, session, act, m, s, g, d in self.db.query(sql, params)
        ]
        return events
