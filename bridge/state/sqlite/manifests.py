"""Injection manifests in the bridge's SQLite file: a revocation is visible at once, and
`revoke_tree` ends a manifest and everything re-injected from it in one transaction."""

from __future__ import annotations

from adapters.scopes import ScopeKey
from bridge.state.common import walk_chain
from bridge.state.records import InjectDepth, InjectionManifest
from bridge.state.sqlite.database import Database

__all__ = ["SqliteManifests"]


class SqliteManifests:
    _COLUMNS = "manifest_id, tenant_id, user_id, parent_agent_id, child_agent_id, task, depth, may_reinject, created_at, expires_at, parent_manifest_id, revoked_at"

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, manifest: InjectionManifest) -> None:
        m = manifest
        with self.db.transaction() as conn:
            conn.execute(
                f"INSERT INTO manifests ({self._COLUMNS}, entries) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]')",
                (m.manifest_id, m.tenant_id, m.user_id, m.parent_agent_id, m.child_agent_id, m.task, m.depth.value, int(m.may_reinject), m.created_at, m.expires_at, m.parent_manifest_id, m.revoked_at),
            )
            conn.executemany(
                "INSERT INTO manifest_entries (manifest_id, position, scope, memory_id) VALUES (?, ?, ?, ?)",
                [(m.manifest_id, n, str(key), mid) for n, (key, mid) in enumerate(m.entries)],
            )

    async def get(self, manifest_id: str) -> InjectionManifest | None:
        with self.db.lock:
            row = self.db.conn.execute(f"SELECT {self._COLUMNS} FROM manifests WHERE manifest_id = ?", (manifest_id,)).fetchone()
            if row is None:
                return None
            entries = self.db.conn.execute("SELECT scope, memory_id FROM manifest_entries WHERE manifest_id = ? ORDER BY position", (manifest_id,)).fetchall()
        mid, tenant, user, parent_agent, child_agent, task, depth, reinject, created, expires, parent_manifest, revoked = row
        return InjectionManifest(
            mid, tenant, user, parent_agent, child_agent, task, InjectDepth(depth), tuple((ScopeKey.parse(k), m) for k, m in entries),
            bool(reinject), created, expires, parent_manifest, revoked,
        )

    async def chain(self, manifest: InjectionManifest) -> list[InjectionManifest]:
        return await walk_chain(self.get, manifest)

    async def revoke_tree(self, manifest_id: str, at: float) -> int:
        with self.db.transaction() as conn:
            return conn.execute(
                # the statement starts with UPDATE so sqlite3 reports its rowcount (a leading WITH gives -1)
                "UPDATE manifests SET revoked_at = ? WHERE revoked_at IS NULL AND manifest_id IN ("
                "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT m.manifest_id FROM manifests m JOIN tree ON m.parent_manifest_id = tree.id)"
                " SELECT id FROM tree)",
                (at, manifest_id),
            ).rowcount

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        if not memory_ids:
            return 0
        ids = sorted(memory_ids)
        with self.db.transaction() as conn:
            changed = 0
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                changed += len(conn.execute(f"SELECT DISTINCT manifest_id FROM manifest_entries WHERE memory_id IN ({marks})", chunk).fetchall())
                conn.execute(f"DELETE FROM manifest_entries WHERE memory_id IN ({marks})", chunk)
            return changed

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM manifest_entries WHERE manifest_id IN (SELECT manifest_id FROM manifests WHERE tenant_id = ? AND user_id = ?)", (tenant_id, user_id))
            return conn.execute("DELETE FROM manifests WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)).rowcount

    async def purge_expired(self, now: float, limit: int = 1000) -> int:
        with self.db.transaction() as conn:
            doomed = [r[0] for r in conn.execute("SELECT manifest_id FROM manifests WHERE expires_at <= ? OR revoked_at IS NOT NULL LIMIT ?", (now, limit))]
            if not doomed:
                return 0
            marks = ",".join("?" * len(doomed))
            conn.execute(f"DELETE FROM manifest_entries WHERE manifest_id IN ({marks})", doomed)
            return conn.execute(f"DELETE FROM manifests WHERE manifest_id IN ({marks})", doomed).rowcount

    async def count_active(self, tenant_id: str, user_id: str, now: float) -> int:
        rows = self.db.query("SELECT COUNT(*) FROM manifests WHERE tenant_id = ? AND user_id = ? AND expires_at > ? AND revoked_at IS NULL", (tenant_id, user_id, now))
        return int(rows[0][0])

    async def live_for_tenant(self, tenant_id: str, now: float, *, memory_id: str | None = None, limit: int = 1000) -> list[InjectionManifest]:
        holding = " AND manifest_id IN (SELECT manifest_id FROM manifest_entries WHERE memory_id = ?)" if memory_id is not None else ""
        rows = self.db.query(
            f"SELECT manifest_id FROM manifests WHERE tenant_id = ? AND revoked_at IS NULL AND expires_at > ?{holding} ORDER BY created_at DESC LIMIT ?",
            (tenant_id, now, *([memory_id] if memory_id is not None else []), limit),
        )
        return [m for m in [await self.get(r[0]) for r in rows] if m is not None]
