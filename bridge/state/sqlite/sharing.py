"""Shares and team membership in the bridge's SQLite file (the protocol: `bridge/state/protocols.py`).

Versioned migrations like the other state tables; a reader's lookups use an index
(`shares_by_reader`, `team_members_by_agent`). Never decides who may do what.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Iterable

from adapters.scopes import ScopeKey
from bridge.state.sqlite.database import Database
from identity.storage.changes import ChangeNumber, counted_changes
from identity.storage.commits import KeptUntilChange
from bridge.state.common import ANY_USER, audience_rows, group_audience, group_shares, share_records
from bridge.state.records import ReaderSharing, Share
from bridge.vocabulary import EVERY_AGENT

__all__ = ["SHARING_MIGRATIONS", "SqliteShares", "SqliteTeams"]

SHARING_MIGRATIONS: tuple[str, ...] = (
    # 1: shares (memory -> extra audience) and team membership (team -> agents)
    """
    CREATE TABLE shares (
        tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, scope TEXT NOT NULL, memory_id TEXT NOT NULL,
        agent_id TEXT NOT NULL, shared_at REAL NOT NULL, PRIMARY KEY (scope, memory_id, agent_id)
    );
    CREATE INDEX shares_by_reader ON shares (tenant_id, user_id, agent_id);
    CREATE INDEX shares_by_memory ON shares (memory_id);
    CREATE TABLE team_members (
        tenant_id TEXT NOT NULL, team_id TEXT NOT NULL, agent_id TEXT NOT NULL, PRIMARY KEY (tenant_id, team_id, agent_id)
    );
    CREATE INDEX team_members_by_agent ON team_members (tenant_id, agent_id);
    """,
    # 2: a change number over both tables, so what a reader was found to share is kept until
    # they change, not until anything (an audit row) is committed to the file
    counted_changes("sharing", ("shares", "team_members")),
)


_SHARED_WITH_PROBE = "SELECT scope, memory_id FROM shares WHERE tenant_id = ? AND user_id = ? AND agent_id = ?"
#: the reader's teams, as rows of the shares' shape: no scope (a share's is never NULL), the team id
_TEAMS_PROBE = "SELECT NULL, team_id FROM team_members WHERE tenant_id = ? AND agent_id = ?"


#: readers whose sharing is kept between recalls; past it the kept ones are dropped together
READERS_KEPT = 4096


class SqliteShares:
    def __init__(self, db: Database) -> None:
        self.db = db
        # the shares' and teams' change number, read again only when the file's commit stamp moved
        self._changes = ChangeNumber("sharing", db.commit_stamp, db.query)
        # (tenant, user, agent) -> (the change number when read, what was read): a reader's
        # shares and teams, valid exactly while no connection has written either table since
        self._readers: KeptUntilChange[tuple[str, str, str], ReaderSharing] = KeptUntilChange(READERS_KEPT)

    async def set_audience(self, scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM shares WHERE scope = ? AND memory_id = ?", (str(scope), memory_id))
            conn.executemany("INSERT INTO shares VALUES (?, ?, ?, ?, ?, ?)", audience_rows(scope, memory_id, audience, at))

    async def audience_of(self, scope: ScopeKey, memory_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        ids = sorted(set(memory_ids))
        rows: list[tuple] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows += self.db.query(f"SELECT memory_id, agent_id FROM shares WHERE scope = ? AND memory_id IN ({marks})", [str(scope), *chunk])
        return group_audience(rows)

    async def shared_with(self, tenant_id: str, user_id: str, agent_id: str) -> dict[ScopeKey, frozenset[str]]:
        """Shares to this reader: (its user or any user) x (its agent or every agent), one exact
        probe of `shares_by_reader` per pair. Written as UNION ALL of equality probes because
        SQLite 3.40 spent ~85 us on `user_id IN (?, ?) AND agent_id IN (?, ?)` (measured on its
        own, an empty table included) against ~12 us for the four probes, and every recall asks."""
        return group_shares(self.db.query(*_shared_with_probes(tenant_id, user_id, agent_id)))

    async def for_reader(self, tenant_id: str, user_id: str, agent_id: str) -> ReaderSharing:
        """One statement: the shares' probes and the team probe, told apart by the NULL scope.

        Every recall asks, and the answer changes only when a share or a team membership does:
        it is kept per reader with the two tables' change number (identity/storage/changes.py)
        and served again while no connection, of this process or another, has written either
        table since. The number is read before the query, so what is kept is never older than
        the number it is kept under; audit rows and every other table leave it alone."""
        number = self._changes.current()
        reader = (tenant_id, user_id, agent_id)
        if (kept := self._readers.get(reader, number)) is not None:
            return kept
        text, params = _shared_with_probes(tenant_id, user_id, agent_id)
        params += (tenant_id, agent_id)
        rows = self.db.query(_with_teams_probe(text), params)
        found = ReaderSharing(MappingProxyType(group_shares([r for r in rows if r[0] is not None])), frozenset([r[1] for r in rows if r[0] is None]))
        self._readers.put(reader, number, found)
        return found

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        ids, changed = sorted(memory_ids), 0
        with self.db.transaction() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                changed += conn.execute(f"DELETE FROM shares WHERE memory_id IN ({','.join('?' * len(chunk))})", chunk).rowcount
        return changed

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM shares WHERE tenant_id = ? AND user_id = ?", (tenant_id, user_id)).rowcount

    async def of_tenant(self, tenant_id: str) -> list[Share]:
        return share_records(self.db.query("SELECT scope, memory_id, agent_id, shared_at FROM shares WHERE tenant_id = ?", (tenant_id,)))


def _shared_with_probes(tenant_id: str, user_id: str, agent_id: str) -> tuple[str, list[str]]:
    """The reader's shares as UNION ALL of exact probes of `shares_by_reader`, one per (user or
    any user) x (agent or every agent) pair, and their parameters. Every recall asks: the
    statement's text (one of three, by the number of distinct pairs) is built once."""
    pairs = dict.fromkeys(((user_id, agent_id), (user_id, EVERY_AGENT), (ANY_USER, agent_id), (ANY_USER, EVERY_AGENT)))
    params: list[str] = []
    for user, agent in pairs:
        params += (tenant_id, user, agent)
    return _probes(len(pairs)), params


@functools.cache
def _probes(count: int) -> str:
    return " UNION ALL ".join([_SHARED_WITH_PROBE] * count)


@functools.cache
def _with_teams_probe(probes: str) -> str:
    return f"{probes} UNION ALL {_TEAMS_PROBE}"


class SqliteTeams:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def set_members(self, tenant_id: str, team_id: str, agent_ids: frozenset[str]) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM team_members WHERE tenant_id = ? AND team_id = ?", (tenant_id, team_id))
            conn.executemany("INSERT INTO team_members VALUES (?, ?, ?)", [(tenant_id, team_id, a) for a in sorted(agent_ids)])

    async def add_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        with self.db.transaction() as conn:
            return conn.execute("INSERT OR IGNORE INTO team_members VALUES (?, ?, ?)", (tenant_id, team_id, agent_id)).rowcount > 0

    async def remove_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM team_members WHERE tenant_id = ? AND team_id = ? AND agent_id = ?", (tenant_id, team_id, agent_id)).rowcount > 0

    async def members(self, tenant_id: str, team_id: str) -> frozenset[str]:
        return frozenset(r[0] for r in self.db.query("SELECT agent_id FROM team_members WHERE tenant_id = ? AND team_id = ?", (tenant_id, team_id)))

    async def teams_of(self, tenant_id: str, agent_id: str) -> frozenset[str]:
        return frozenset(r[0] for r in self.db.query("SELECT team_id FROM team_members WHERE tenant_id = ? AND agent_id = ?", (tenant_id, agent_id)))

    async def knows_agent(self, tenant_id: str, agent_id: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM team_members WHERE tenant_id = ? AND agent_id = ? LIMIT 1", (tenant_id, agent_id)))

    async def has_teams(self, tenant_id: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM team_members WHERE tenant_id = ? LIMIT 1", (tenant_id,)))

    async def of_tenant(self, tenant_id: str) -> dict[str, frozenset[str]]:
        return group_audience(self.db.query("SELECT team_id, agent_id FROM team_members WHERE tenant_id = ?", (tenant_id,)))
