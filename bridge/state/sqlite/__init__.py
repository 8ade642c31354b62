"""The embedded default state: audit log, write intents, grants and manifests in one SQLite file.

One file (WAL, fsync on commit) so a write's audit row, the intent it closes and the store
marker it advances commit in one transaction. Schemas are versioned migrations applied at open;
the audit table is append-only (triggers refuse UPDATE and DELETE).

Durability: rows of state-changing actions are fsynced before the action is acknowledged.
Rows of reads (`recall`, `inspect`) written through `append_read` are group-committed
(`bridge/state/sqlite/read_rows.py`): queued in the process and committed together within
50 ms, after 64 rows, with the next state-changing row, or before an audit query — so a process
crash can lose the read rows of the last 50 ms, never a write's row. Committed read rows go to
the WAL without waiting for the disk, so a power loss can also lose the read rows since the
last fsynced commit. `defer_reads=False` (VIKING_BRIDGE_AUDIT_DEFER_READS=false) commits each
read row before the recall returns; `fsync_reads=True` (VIKING_BRIDGE_AUDIT_FSYNC_READS) also
fsyncs it.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

from adapters.base import StoreMarker
from adapters.scopes import ScopeKey

from bridge.state.sqlite.database import Database
from bridge.state.protocols import WriteIntent
from bridge.state.sqlite import carry
from bridge.state.sqlite.audit_json import encode_detail, json_list
from bridge.state.sqlite.manifests import SqliteManifests
from bridge.state.sqlite.read_rows import GroupCommittedReads, ReadRowQueue
from bridge.state.sqlite.sharing import SHARING_MIGRATIONS, SqliteShares, SqliteTeams
from bridge.state.common import check_audit_action
from bridge.state.records import READ_ACTIONS, STORING_ACTIONS, AuditEvent, AuditRecord, AuditView, Grant
from bridge.state.sqlite.usage import SqliteUsage
from identity.model import MemoryIdentity
from identity.storage.migrations import apply_migrations

__all__ = ["SqliteState", "SqliteAuditLog", "SqliteGrants", "SqliteManifests", "AUDIT_MIGRATIONS", "GRANT_MIGRATIONS", "MANIFEST_MIGRATIONS"]

AUDIT_MIGRATIONS: tuple[str, ...] = (
    # 1: the first release's audit table
    """
    CREATE TABLE IF NOT EXISTS audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, tenant_id TEXT NOT NULL,
        actor TEXT NOT NULL, user_id TEXT NOT NULL, actor_fingerprint TEXT NOT NULL,
        session_id TEXT NOT NULL, action TEXT NOT NULL, memory_ids TEXT NOT NULL,
        scopes TEXT NOT NULL, grant_ids TEXT NOT NULL, detail TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS audit_by_tenant ON audit (tenant_id, seq);
    CREATE INDEX IF NOT EXISTS audit_by_user ON audit (tenant_id, user_id, seq);
    CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
    CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
    """,
    # 2: write intents (crash reconciliation) and the store this log describes
    """
    CREATE TABLE write_intents (
        intent_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, actor TEXT NOT NULL, user_id TEXT NOT NULL,
        actor_fingerprint TEXT NOT NULL, session_id TEXT NOT NULL, action TEXT NOT NULL,
        scope TEXT NOT NULL, backend_key TEXT NOT NULL, created_at REAL NOT NULL
    );
    CREATE TABLE store_binding (
        only_row INTEGER PRIMARY KEY CHECK (only_row = 1), store_id TEXT NOT NULL, writes INTEGER NOT NULL
    );
    """,
)
GRANT_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS grants (
        grant_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, grantee_user_id TEXT NOT NULL,
        grantee_agent_id TEXT, scope TEXT NOT NULL, issued_by TEXT NOT NULL, reason TEXT NOT NULL,
        issued_at REAL NOT NULL, expires_at REAL NOT NULL, revoked_at REAL
    );
    """,
    "CREATE INDEX grants_by_grantee ON grants (tenant_id, grantee_user_id);",
)


def _manifest_entries_from_json(conn: sqlite3.Connection) -> None:
    for manifest_id, entries in conn.execute("SELECT manifest_id, entries FROM manifests").fetchall():
        conn.executemany(
            "INSERT OR IGNORE INTO manifest_entries (manifest_id, position, scope, memory_id) VALUES (?, ?, ?, ?)",
            [(manifest_id, n, scope, memory_id) for n, (scope, memory_id) in enumerate(json.loads(entries))],
        )
    conn.execute("UPDATE manifests SET entries = '[]'")


MANIFEST_MIGRATIONS: tuple[Any, ...] = (
    """
    CREATE TABLE IF NOT EXISTS manifests (
        manifest_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, user_id TEXT NOT NULL,
        parent_agent_id TEXT NOT NULL, child_agent_id TEXT NOT NULL, task TEXT NOT NULL,
        depth TEXT NOT NULL, entries TEXT NOT NULL, may_reinject INTEGER NOT NULL,
        created_at REAL NOT NULL, expires_at REAL NOT NULL
    );
    """,
    # 2: lineage (revocation cascades), revocation time, entries as an indexed table
    """
    ALTER TABLE manifests ADD COLUMN parent_manifest_id TEXT;
    ALTER TABLE manifests ADD COLUMN revoked_at REAL;
    CREATE INDEX manifests_by_parent ON manifests (parent_manifest_id);
    CREATE INDEX manifests_by_user ON manifests (tenant_id, user_id, expires_at);
    CREATE INDEX manifests_by_expiry ON manifests (expires_at);
    CREATE TABLE manifest_entries (
        manifest_id TEXT NOT NULL REFERENCES manifests (manifest_id) ON DELETE CASCADE,
        position INTEGER NOT NULL, scope TEXT NOT NULL, memory_id TEXT NOT NULL,
        PRIMARY KEY (manifest_id, position)
    );
    CREATE INDEX manifest_entries_by_memory ON manifest_entries (memory_id);
    """,
    _manifest_entries_from_json,
)


def _placeholders(values: Iterable[object]) -> str:
    return ", ".join("?" for _ in values)


class SqliteAuditLog(GroupCommittedReads):
    def __init__(self, db: Database, *, fsync_reads: bool = False, defer_reads: bool = True) -> None:
        self.db = db
        self.fsync_reads = fsync_reads
        #: read rows waiting for their group commit (None: every read row is committed at once)
        self._reads = ReadRowQueue(self.flush) if defer_reads and not fsync_reads else None

    @staticmethod
    def _row(identity: MemoryIdentity, action: str, memory_ids: Iterable[str], scopes: Iterable[object],
             grant_ids: Iterable[str | None], detail: dict[str, Any] | None) -> tuple:
        return (
            time.time(), identity.tenant_id, identity.principal, identity.user_id, identity.fingerprint, identity.session_id, action,
            json_list(memory_ids), json_list(sorted({str(s) for s in scopes})), json_list(sorted({g for g in grant_ids if g})),
            encode_detail(detail or {}),
        )

    async def append(
        self,
        identity: MemoryIdentity,
        action: str,
        *,
        memory_ids: Iterable[str] = (),
        scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (),
        detail: dict[str, Any] | None = None,
        closes_intent: str | None = None,
        store_marker: StoreMarker | None = None,
    ) -> int:
        check_audit_action(action)
        fsync = self.fsync_reads or action not in READ_ACTIONS or closes_intent is not None
        row = self._row(identity, action, memory_ids, scopes, grant_ids, detail)
        with self._transaction(fsync=fsync) as conn:
            if closes_intent is not None:
                # the intent row is the claim: if open checks already reconciled this intent (a
                # write slower than the grace), its `recovered` row is the one audit row
                claimed = conn.execute("DELETE FROM write_intents WHERE intent_id = ?", (closes_intent,))
                if claimed.rowcount == 0 and (recovered := self._recovered_seq(conn, closes_intent)) is not None:
                    return recovered
            seq = self._insert(conn, row)
            if store_marker is not None:
                self._advance_marker(conn, store_marker)
            return seq

    async def append_stored(
        self, identity: MemoryIdentity, action: str, *, memory_id: str, scope: ScopeKey, backend_key: str, created: bool,
        closes_intent: str, detail: dict[str, Any] | None = None, store_marker: StoreMarker | None = None,
    ) -> int:
        check_audit_action(action)
        row = (
            time.time(), identity.tenant_id, identity.principal, identity.user_id, identity.fingerprint, identity.session_id, action,
            json_list([memory_id]), json.dumps([str(scope)]), "[]", encode_detail(detail or {}),
        )
        with self._transaction() as conn:
            claimed = conn.execute("DELETE FROM write_intents WHERE intent_id = ?", (closes_intent,)).rowcount
            # an earlier attempt of this same write (same scope, same backend key) is audited by this row
            conn.execute(
                f"DELETE FROM write_intents WHERE scope = ? AND backend_key = ? AND action IN ({_placeholders(STORING_ACTIONS)})",
                (str(scope), backend_key, *sorted(STORING_ACTIONS)),
            )
            if not created or not claimed:
                existing = self._stored_seq(conn, identity.tenant_id, memory_id)
                if existing is not None:
                    if store_marker is not None:
                        self._advance_marker(conn, store_marker)
                    return existing
            seq = self._insert(conn, row)
            if store_marker is not None:
                self._advance_marker(conn, store_marker)
            return seq

    @staticmethod
    def _stored_seq(conn: sqlite3.Connection, tenant_id: str, memory_id: str) -> int | None:
        """The row that already says `memory_id` was stored, if one does (only asked for a
        deduplicated or reconciled write, so the scan is off the ordinary write's path)."""
        actions = sorted(STORING_ACTIONS)
        found = conn.execute(
            "SELECT seq FROM audit WHERE tenant_id = ? AND instr(memory_ids, ?) > 0"
            f" AND (action IN ({_placeholders(actions)}) OR (action = 'recovered' AND json_extract(detail, '$.operation') IN ({_placeholders(actions)})))"
            " ORDER BY seq LIMIT 1",
            (tenant_id, json.dumps(memory_id), *actions, *actions),
        ).fetchone()
        return None if found is None else int(found[0])

    @staticmethod
    def _recovered_seq(conn: sqlite3.Connection, intent_id: str) -> int | None:
        found = conn.execute(
            "SELECT seq FROM audit WHERE action = 'recovered' AND json_extract(detail, '$.intent') = ? ORDER BY seq LIMIT 1", (intent_id,)
        ).fetchone()
        return None if found is None else int(found[0])

    @staticmethod
    def _insert(conn: sqlite3.Connection, row: tuple) -> int:
        cursor = conn.execute(
            "INSERT INTO audit (ts, tenant_id, actor, user_id, actor_fingerprint, session_id, action, memory_ids, scopes, grant_ids, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        return int(cursor.lastrowid)

    @staticmethod
    def _advance_marker(conn: sqlite3.Connection, marker: StoreMarker) -> None:
        # MAX: several processes may write one store; the recorded mark only ever moves forward
        conn.execute(
            "INSERT INTO store_binding (only_row, store_id, writes) VALUES (1, ?, ?)"
            " ON CONFLICT (only_row) DO UPDATE SET writes = MAX(writes, excluded.writes) WHERE store_id = excluded.store_id",
            (marker.store_id, marker.writes),
        )

    async def query(
        self, view: AuditView, *, action: str | None = None, memory_id: str | None = None, since_seq: int = 0,
        before_seq: int | None = None, actor: str | None = None, limit: int = 100,
    ) -> list[AuditEvent]:
        self.flush()  # this process's own queued reads are part of what it asks for
        sql = "SELECT seq, ts, tenant_id, actor, session_id, action, memory_ids, scopes, grant_ids, detail FROM audit WHERE tenant_id = ? AND seq > ?"
        params: list[object] = [view.tenant_id, since_seq]
        if view.user_id is not None:
            sql += " AND user_id = ?"
            params.append(view.user_id)
        for clause, value in ((" AND seq < ?", before_seq), (" AND actor = ?", actor), (" AND action = ?", action)):
            if value is not None:
                sql += clause
                params.append(value)
        if memory_id is not None:
            sql += " AND instr(memory_ids, ?) > 0"  # JSON-quoted: matches whole ids only
            params.append(json.dumps(memory_id))
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        return [
            AuditEvent(seq, ts, tenant, who, session, act, tuple(json.loads(m)), tuple(json.loads(s)), tuple(json.loads(g)), json.loads(d))
            for seq, ts, tenant, who, session, act, m, s, g, d in self.db.query(sql, params)
        ]

    async def begin_intent(self, identity: MemoryIdentity, action: str, scope: ScopeKey, backend_key: str) -> str:
        intent_id = uuid.uuid4().hex
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO write_intents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (intent_id, identity.tenant_id, identity.principal, identity.user_id, identity.fingerprint, identity.session_id, action, str(scope), backend_key, time.time()),
            )
        return intent_id

    async def open_intents(self) -> Sequence[WriteIntent]:
        rows = self.db.query("SELECT * FROM write_intents ORDER BY created_at")
        return [WriteIntent(i, t, a, u, f, s, act, ScopeKey.parse(scope), key, c) for i, t, a, u, f, s, act, scope, key, c in rows]

    async def close_intent(self, intent_id: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM write_intents WHERE intent_id = ?", (intent_id,))

    async def recover_intent(self, intent: WriteIntent, memory_ids: Sequence[str], store_marker: StoreMarker | None = None) -> int:
        row = (
            time.time(), intent.tenant_id, intent.actor, intent.user_id, intent.actor_fingerprint, intent.session_id, "recovered",
            json_list(memory_ids), json.dumps([str(intent.scope)]), "[]",
            json.dumps({"operation": intent.action, "intent": intent.intent_id, "announced_at": intent.created_at}),
        )
        with self._transaction() as conn:
            if intent.action in STORING_ACTIONS and len(memory_ids) == 1 and (existing := self._stored_seq(conn, intent.tenant_id, memory_ids[0])) is not None:
                conn.execute("DELETE FROM write_intents WHERE intent_id = ?", (intent.intent_id,))  # a retry audited it
                return existing
            seq = self._insert(conn, row)
            conn.execute("DELETE FROM write_intents WHERE intent_id = ?", (intent.intent_id,))
            if store_marker is not None:
                self._advance_marker(conn, store_marker)
            return seq

    async def bound_store(self) -> StoreMarker | None:
        rows = self.db.query("SELECT store_id, writes FROM store_binding")
        return StoreMarker(rows[0][0], int(rows[0][1])) if rows else None

    async def bind_store(self, marker: StoreMarker) -> None:
        with self.db.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO store_binding (only_row, store_id, writes) VALUES (1, ?, ?)", (marker.store_id, marker.writes))

    async def has_rows(self) -> bool:
        self.flush()
        return bool(self.db.query("SELECT 1 FROM audit LIMIT 1"))

    async def export_rows(self, tenant_id: str, *, after_seq: int = 0, limit: int = 500) -> list[AuditRecord]:
        self.flush()  # recall rows still queued in this process belong to the history too
        return carry.export_rows(self.db, tenant_id, after_seq, limit)

    async def import_rows(self, rows: Sequence[AuditRecord], origin: str) -> int:
        return carry.import_rows(self.db, rows, origin)


class SqliteGrants:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, grant: Grant) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO grants VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (grant.grant_id, grant.tenant_id, grant.grantee_user_id, grant.grantee_agent_id, str(grant.scope), grant.issued_by, grant.reason, grant.issued_at, grant.expires_at),
            )

    @staticmethod
    def _row(row: tuple) -> Grant:
        gid, tenant, user, agent, scope, by, reason, issued, expires, revoked = row
        return Grant(gid, tenant, user, agent, ScopeKey.parse(scope), by, reason, issued, expires, revoked)

    async def get(self, grant_id: str) -> Grant | None:
        rows = self.db.query("SELECT * FROM grants WHERE grant_id = ?", (grant_id,))
        return self._row(rows[0]) if rows else None

    async def for_grantee(self, tenant_id: str, user_id: str) -> list[Grant]:
        return [self._row(r) for r in self.db.query("SELECT * FROM grants WHERE tenant_id = ? AND grantee_user_id = ?", (tenant_id, user_id))]

    async def revoke(self, grant_id: str, at: float) -> bool:
        with self.db.transaction() as conn:
            return conn.execute("UPDATE grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL", (at, grant_id)).rowcount > 0

    async def purge_grantee(self, tenant_id: str, user_id: str) -> int:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM grants WHERE tenant_id = ? AND grantee_user_id = ?", (tenant_id, user_id)).rowcount

    async def for_tenant(self, tenant_id: str, *, limit: int = 1000) -> list[Grant]:
        return [self._row(r) for r in self.db.query("SELECT * FROM grants WHERE tenant_id = ? ORDER BY issued_at DESC LIMIT ?", (tenant_id, limit))]


class SqliteState:
    """Audit, grants and manifests in one SQLite file (`bridge.sqlite3` under the bridge home)."""

    def __init__(self, path: str | Path, *, fsync_reads: bool = False, defer_reads: bool = True) -> None:
        self.db = Database(path)
        with self.db.lock:
            apply_migrations(self.db.conn, "audit", AUDIT_MIGRATIONS)
            apply_migrations(self.db.conn, "grants", GRANT_MIGRATIONS)
            apply_migrations(self.db.conn, "manifests", MANIFEST_MIGRATIONS)
            apply_migrations(self.db.conn, "sharing", SHARING_MIGRATIONS)
            apply_migrations(self.db.conn, "audit_carried", carry.CARRY_MIGRATIONS)
        self.audit = SqliteAuditLog(self.db, fsync_reads=fsync_reads, defer_reads=defer_reads)
        self.grants = SqliteGrants(self.db)
        self.manifests = SqliteManifests(self.db)
        self.usage = SqliteUsage(self.db)  # storage-quota counters (UsageLedger, bridge/state/protocols.py)
        self.shares = SqliteShares(self.db)
        self.teams = SqliteTeams(self.db)

    @property
    def path(self) -> Path:
        return self.db.path

    def bound_store_id(self) -> str | None:
        """The store id this state is bound to, read synchronously (opening a local store
        needs it before any event loop runs)."""
        rows = self.db.query("SELECT store_id FROM store_binding")
        return rows[0][0] if rows else None

    def close(self) -> None:
        try:
            self.audit.flush()  # queued read rows are committed before the file closes
        finally:
            self.db.close()

    async def aclose(self) -> None:
        self.close()
