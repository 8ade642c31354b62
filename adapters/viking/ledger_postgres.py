"""The Viking write ledger on PostgreSQL, shared by every replica in front of one collection.

Why: the ledger (`adapters.viking.ledger`) is what makes a retried write idempotent at the
service, and its rows must be seen by whichever replica gets the retry. Kept as a file on one
machine, two replicas would each believe a retried write unsent and add it twice. Here the rows
live in the bridge's PostgreSQL schema, and `hold` serialises one memory id's add across replicas
with an advisory lock, so two replicas sent the same write at once send it once.

The same rows and the same statements as the SQLite ledger (one short round trip each; the
adapter calls them synchronously, as it does the SQLite file). It never decides who may see what.
"""

from __future__ import annotations

import json
import secrets
from contextlib import AbstractAsyncContextManager
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

from adapters.errors import BackendMisconfigured, BackendUnavailable
from adapters.shared.pglock import advisory_hold, lock_key
from adapters.viking.ledger import LedgerRow
from identity.errors import StorageUnavailable, VikingBridgeError
from identity.storage.postgres import DEFAULT_SCHEMA, PgPool, migrate

__all__ = ["PgWriteLedger", "LEDGER_MIGRATIONS"]

LEDGER_MIGRATIONS = (("viking_ledger", ("""
    CREATE TABLE viking_writes (
        collection text NOT NULL, principal text NOT NULL, group_id text NOT NULL,
        call text NOT NULL, event_id text, uncertain integer NOT NULL DEFAULT 0, touched_at double precision NOT NULL,
        PRIMARY KEY (collection, principal, group_id));
    CREATE INDEX viking_writes_due ON viking_writes (uncertain, touched_at);
    CREATE TABLE viking_meta (name text PRIMARY KEY, value bytea NOT NULL);
    GRANT SELECT, INSERT, UPDATE, DELETE ON viking_writes, viking_meta TO {runtime};
""",)),)

_COLUMNS = "collection, principal, group_id, call, event_id, uncertain, touched_at"


class PgWriteLedger:
    """`WriteLedger` over PostgreSQL. `url` is the runtime role; `migrate_url` the schema owner."""

    def __init__(self, url: str, *, migrate_url: str | None = None, schema: str = DEFAULT_SCHEMA, runtime_role: str | None = None,
                 lock_connections: int = 16) -> None:
        try:
            migrate(migrate_url or url, LEDGER_MIGRATIONS, schema=schema, runtime_role=runtime_role or unquote(urlsplit(url).username or ""))
            self.pool = PgPool(url, schema=schema, max_size=4)
        except VikingBridgeError as exc:
            raise BackendMisconfigured(f"the Viking write ledger on PostgreSQL cannot be opened: {exc}", backend="viking") from None
        try:
            self._locks = PgPool(url, schema=schema, min_size=1, max_size=lock_connections, timeout=60.0)
        except BaseException:
            self.pool.close()
            raise
        self.path = None
        self._namespace = f"viking-ledger/{schema}"

    def __repr__(self) -> str:
        return f"PgWriteLedger({self.pool.where!r})"

    def _run(self, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async def run(conn: Any) -> list[tuple[Any, ...]]:
            cur = await conn.execute(query, args)
            return list(await cur.fetchall()) if cur.description else []

        try:
            return self.pool.run_sync(run, "the Viking write ledger")
        except StorageUnavailable as exc:
            raise BackendUnavailable(f"the Viking write ledger is unavailable: {exc}", backend="viking") from None
        except VikingBridgeError as exc:
            raise BackendMisconfigured(f"the Viking write ledger failed: {exc}", backend="viking") from None

    def hold(self, collection: str, principal: str, group_id: str) -> AbstractAsyncContextManager[None]:
        """One add of this memory id at a time across every replica (see the module docstring)."""
        return advisory_hold(self._locks, lock_key(self._namespace, collection, principal, group_id), "the Viking write ledger")

    def secret(self, name: str) -> bytes:
        """A random secret shared by every replica (the list_page cursor key), made on first use."""
        self._run("INSERT INTO viking_meta (name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING", (name, secrets.token_bytes(32)))
        return bytes(self._run("SELECT value FROM viking_meta WHERE name = %s", (name,))[0][0])

    @staticmethod
    def _row(r: tuple[Any, ...]) -> LedgerRow:
        return LedgerRow(r[0], r[1], r[2], json.loads(r[3]), r[4], int(r[5]), float(r[6]))

    def get(self, collection: str, principal: str, group_id: str) -> LedgerRow | None:
        rows = self._run(f"SELECT {_COLUMNS} FROM viking_writes WHERE collection = %s AND principal = %s AND group_id = %s",
                         (collection, principal, group_id))
        return self._row(rows[0]) if rows else None

    def begin(self, collection: str, principal: str, group_id: str, call: Mapping[str, Any], now: float) -> LedgerRow:
        """Record the call before it is sent; an existing row (an earlier attempt, any replica) wins."""
        self._run(
            "INSERT INTO viking_writes (collection, principal, group_id, call, touched_at) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (collection, principal, group_id) DO NOTHING",
            (collection, principal, group_id, json.dumps(dict(call), sort_keys=True), now),
        )
        row = self.get(collection, principal, group_id)
        assert row is not None
        return row

    def uncertain(self, collection: str, principal: str, group_id: str, now: float) -> None:
        self._run("UPDATE viking_writes SET uncertain = uncertain + 1, touched_at = %s WHERE collection = %s AND principal = %s AND group_id = %s",
                  (now, collection, principal, group_id))

    def won(self, collection: str, principal: str, group_id: str, event_id: str, now: float) -> None:
        """The first acknowledged copy wins; a later, different one is a copy to remove."""
        self._run(
            "UPDATE viking_writes SET"
            " uncertain = uncertain + (CASE WHEN event_id IS NOT NULL AND event_id != %s THEN 1 ELSE 0 END),"
            " event_id = COALESCE(event_id, %s), touched_at = %s WHERE collection = %s AND principal = %s AND group_id = %s",
            (event_id, event_id, now, collection, principal, group_id),
        )

    def settle(self, collection: str, principal: str, group_id: str, event_id: str) -> None:
        self._run("UPDATE viking_writes SET event_id = %s, uncertain = 0 WHERE collection = %s AND principal = %s AND group_id = %s",
                  (event_id, collection, principal, group_id))

    def forget(self, collection: str, principal: str, group_id: str | None = None) -> None:
        if group_id is None:
            self._run("DELETE FROM viking_writes WHERE collection = %s AND principal = %s", (collection, principal))
        else:
            self._run("DELETE FROM viking_writes WHERE collection = %s AND principal = %s AND group_id = %s", (collection, principal, group_id))

    def due(self, settled_before: float, limit: int) -> list[LedgerRow]:
        rows = self._run(
            f"SELECT {_COLUMNS} FROM viking_writes WHERE (uncertain > 0 OR event_id IS NULL) AND touched_at <= %s ORDER BY touched_at LIMIT %s",
            (settled_before, max(1, limit)),
        )
        return [self._row(r) for r in rows]

    def pending_count(self) -> int:
        return int(self._run("SELECT COUNT(*) FROM viking_writes WHERE uncertain > 0 OR event_id IS NULL")[0][0])

    def close(self) -> None:
        self.pool.close()
        self._locks.close()
