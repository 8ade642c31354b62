"""Injection manifests on PostgreSQL, shared by every replica: a revocation is visible to all at
once, and `revoke_tree` ends a manifest and everything re-injected from it in one statement."""

from __future__ import annotations

from adapters.scopes import ScopeKey
from bridge.state.common import walk_chain
from bridge.state.postgres.queries import Conn, count, fetch
from bridge.state.records import InjectDepth, InjectionManifest
from identity.storage.postgres import PgPool

__all__ = ["PgManifests"]


_MANIFEST_COLUMNS = "manifest_id, tenant_id, user_id, parent_agent_id, child_agent_id, task, depth, may_reinject, created_at, expires_at, parent_manifest_id, revoked_at"


class PgManifests:
    def __init__(self, pool: PgPool) -> None:
        self.pool = pool

    async def _count(self, text: str, params: tuple) -> int:
        return await count(self.pool, text, params, "manifest store")

    async def add(self, manifest: InjectionManifest) -> None:
        m = manifest

        async def run(conn: Conn) -> None:
            await conn.execute(
                f"INSERT INTO manifests ({_MANIFEST_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (m.manifest_id, m.tenant_id, m.user_id, m.parent_agent_id, m.child_agent_id, m.task, m.depth.value, m.may_reinject,
                 m.created_at, m.expires_at, m.parent_manifest_id, m.revoked_at),
            )
            if m.entries:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "INSERT INTO manifest_entries (manifest_id, position, scope, memory_id) VALUES (%s, %s, %s, %s)",
                        [(m.manifest_id, n, str(key), mid) for n, (key, mid) in enumerate(m.entries)],
                    )

        await self.pool.run(run, "manifest store")

    async def get(self, manifest_id: str) -> InjectionManifest | None:
        async def run(conn: Conn) -> InjectionManifest | None:
            row = await (await conn.execute(f"SELECT {_MANIFEST_COLUMNS} FROM manifests WHERE manifest_id = %s", (manifest_id,))).fetchone()
            if row is None:
                return None
            entries = await (await conn.execute("SELECT scope, memory_id FROM manifest_entries WHERE manifest_id = %s ORDER BY position", (manifest_id,))).fetchall()
            mid, tenant, user, parent_agent, child_agent, task, depth, reinject, created, expires, parent_manifest, revoked = row
            return InjectionManifest(
                mid, tenant, user, parent_agent, child_agent, task, InjectDepth(depth), tuple((ScopeKey.parse(k), e) for k, e in entries),
                bool(reinject), created, expires, parent_manifest, revoked,
            )

        return await self.pool.run(run, "manifest store")

    async def chain(self, manifest: InjectionManifest) -> list[InjectionManifest]:
        return await walk_chain(self.get, manifest)

    async def revoke_tree(self, manifest_id: str, at: float) -> int:
        return await self._count(
            "WITH RECURSIVE tree(id) AS (SELECT %s::text UNION SELECT m.manifest_id FROM manifests m JOIN tree ON m.parent_manifest_id = tree.id)"
            " UPDATE manifests SET revoked_at = %s WHERE manifest_id IN (SELECT id FROM tree) AND revoked_at IS NULL",
            (manifest_id, at),
        )

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        if not memory_ids:
            return 0

        async def run(conn: Conn) -> int:
            rows = await (await conn.execute("DELETE FROM manifest_entries WHERE memory_id = ANY(%s) RETURNING manifest_id", (sorted(memory_ids),))).fetchall()
            return len({r[0] for r in rows})

        return await self.pool.run(run, "manifest store")

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        return await self._count("DELETE FROM manifests WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id))

    async def purge_expired(self, now: float, limit: int = 1000) -> int:
        return await self._count(
            "DELETE FROM manifests WHERE manifest_id IN (SELECT manifest_id FROM manifests WHERE expires_at <= %s OR revoked_at IS NOT NULL"
            " LIMIT %s FOR UPDATE SKIP LOCKED)", (now, limit),
        )

    async def count_active(self, tenant_id: str, user_id: str, now: float) -> int:
        rows = await fetch(self.pool, "SELECT count(*) FROM manifests WHERE tenant_id = %s AND user_id = %s AND expires_at > %s AND revoked_at IS NULL",
                            (tenant_id, user_id, now), "manifest store")
        return int(rows[0][0])

    async def live_for_tenant(self, tenant_id: str, now: float, *, memory_id: str | None = None, limit: int = 1000) -> list[InjectionManifest]:
        holding = " AND manifest_id IN (SELECT manifest_id FROM manifest_entries WHERE memory_id = %s)" if memory_id is not None else ""
        rows = await fetch(self.pool, f"SELECT manifest_id FROM manifests WHERE tenant_id = %s AND revoked_at IS NULL AND expires_at > %s{holding} ORDER BY created_at DESC LIMIT %s",
                            (tenant_id, now, *([memory_id] if memory_id is not None else []), limit), "manifest store")
        return [m for m in [await self.get(r[0]) for r in rows] if m is not None]
