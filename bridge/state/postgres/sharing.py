"""Shares and team membership on PostgreSQL, shared by every replica (the protocol: `bridge/state/protocols.py`).

Nothing is cached in the process: a narrowed audience or a removed member is one statement every
replica sees at its next read. The migration is one more state component (`sharing`), applied
with the others under the advisory lock. Never decides who may do what.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence


from adapters.scopes import ScopeKey
from bridge.state.common import ANY_USER, audience_rows, group_audience, group_shares, share_records
from bridge.state.records import ReaderSharing, Share
from bridge.vocabulary import EVERY_AGENT
from bridge.state.postgres.queries import Conn, count, fetch
from identity.storage.postgres import PgPool

__all__ = ["SHARING_PG_MIGRATION", "PgShares", "PgTeams"]


SHARING_PG_MIGRATION: tuple[str, tuple[str, ...]] = ("sharing", ("""
    CREATE TABLE shares (
        tenant_id text NOT NULL, user_id text NOT NULL, scope text NOT NULL, memory_id text NOT NULL,
        agent_id text NOT NULL, shared_at double precision NOT NULL, PRIMARY KEY (scope, memory_id, agent_id));
    CREATE INDEX shares_by_reader ON shares (tenant_id, user_id, agent_id);
    CREATE INDEX shares_by_memory ON shares (memory_id);
    CREATE TABLE team_members (
        tenant_id text NOT NULL, team_id text NOT NULL, agent_id text NOT NULL, PRIMARY KEY (tenant_id, team_id, agent_id));
    CREATE INDEX team_members_by_agent ON team_members (tenant_id, agent_id);
    GRANT SELECT, INSERT, DELETE ON shares, team_members TO {runtime};
""",))


_SHARED_WITH = "SELECT scope, memory_id FROM shares WHERE tenant_id = %s AND user_id IN (%s, %s) AND agent_id IN (%s, %s)"
_TEAMS_OF = "SELECT team_id FROM team_members WHERE tenant_id = %s AND agent_id = %s"


class _Pg:
    what = "sharing store"

    def __init__(self, pool: PgPool) -> None:
        self.pool = pool

    async def _fetch(self, text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return await fetch(self.pool, text, params, self.what)

    async def _count(self, text: str, params: Sequence[Any]) -> int:
        return await count(self.pool, text, params, self.what)


class PgShares(_Pg):
    async def set_audience(self, scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> None:
        rows = audience_rows(scope, memory_id, audience, at)

        async def run(conn: Conn) -> None:
            await conn.execute("DELETE FROM shares WHERE scope = %s AND memory_id = %s", (str(scope), memory_id))
            if rows:
                async with conn.cursor() as cur:
                    await cur.executemany("INSERT INTO shares VALUES (%s, %s, %s, %s, %s, %s)", rows)

        await self.pool.run(run, self.what)

    async def audience_of(self, scope: ScopeKey, memory_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        ids = sorted(set(memory_ids))
        if not ids:
            return {}
        return group_audience(await self._fetch("SELECT memory_id, agent_id FROM shares WHERE scope = %s AND memory_id = ANY(%s)", (str(scope), ids)))

    async def shared_with(self, tenant_id: str, user_id: str, agent_id: str) -> dict[ScopeKey, frozenset[str]]:
        return group_shares(await self._fetch(_SHARED_WITH, (tenant_id, user_id, ANY_USER, agent_id, EVERY_AGENT)))

    async def for_reader(self, tenant_id: str, user_id: str, agent_id: str) -> ReaderSharing:
        """Both statements in one `PgPool.read`: one round trip."""
        shares, teams = await self.pool.read(
            [(_SHARED_WITH, (tenant_id, user_id, ANY_USER, agent_id, EVERY_AGENT)), (_TEAMS_OF, (tenant_id, agent_id))], self.what)
        return ReaderSharing(group_shares(shares), frozenset([r[0] for r in teams]))

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        if not memory_ids:
            return 0
        return await self._count("DELETE FROM shares WHERE memory_id = ANY(%s)", (sorted(memory_ids),))

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        return await self._count("DELETE FROM shares WHERE tenant_id = %s AND user_id = %s", (tenant_id, user_id))

    async def of_tenant(self, tenant_id: str) -> list[Share]:
        return share_records(await self._fetch("SELECT scope, memory_id, agent_id, shared_at FROM shares WHERE tenant_id = %s", (tenant_id,)))


class PgTeams(_Pg):
    async def set_members(self, tenant_id: str, team_id: str, agent_ids: frozenset[str]) -> None:
        async def run(conn: Conn) -> None:
            await conn.execute("DELETE FROM team_members WHERE tenant_id = %s AND team_id = %s", (tenant_id, team_id))
            if agent_ids:
                async with conn.cursor() as cur:
                    await cur.executemany("INSERT INTO team_members VALUES (%s, %s, %s)", [(tenant_id, team_id, a) for a in sorted(agent_ids)])

        await self.pool.run(run, self.what)

    async def add_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        return await self._count("INSERT INTO team_members VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (tenant_id, team_id, agent_id)) > 0

    async def remove_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        return await self._count("DELETE FROM team_members WHERE tenant_id = %s AND team_id = %s AND agent_id = %s", (tenant_id, team_id, agent_id)) > 0

    async def members(self, tenant_id: str, team_id: str) -> frozenset[str]:
        return frozenset(r[0] for r in await self._fetch("SELECT agent_id FROM team_members WHERE tenant_id = %s AND team_id = %s", (tenant_id, team_id)))

    async def teams_of(self, tenant_id: str, agent_id: str) -> frozenset[str]:
        return frozenset(r[0] for r in await self._fetch(_TEAMS_OF, (tenant_id, agent_id)))

    async def knows_agent(self, tenant_id: str, agent_id: str) -> bool:
        return bool(await self._fetch("SELECT 1 FROM team_members WHERE tenant_id = %s AND agent_id = %s LIMIT 1", (tenant_id, agent_id)))

    async def has_teams(self, tenant_id: str) -> bool:
        return bool(await self._fetch("SELECT 1 FROM team_members WHERE tenant_id = %s LIMIT 1", (tenant_id,)))

    async def of_tenant(self, tenant_id: str) -> dict[str, frozenset[str]]:
        return group_audience(await self._fetch("SELECT team_id, agent_id FROM team_members WHERE tenant_id = %s", (tenant_id,)))
