"""Identity state on PostgreSQL, shared by every replica: sessions, API keys, nonces.

Why PostgreSQL: several service replicas must see one session binding, one revocation, one
nonce; a SQLite file on one machine cannot be shared between machines. The pool and the
migration runner these repositories run on are `identity.storage.postgres`.

Integrity rules (`identity.state.protocols`) in SQL: bind-once is INSERT .. ON CONFLICT DO
NOTHING + read-back; a revocation is UPDATE .. WHERE revoked_at IS NULL; check-and-remember is
one INSERT .. ON CONFLICT DO UPDATE WHERE expired RETURNING (the row lock picks one winner
across replicas). The runtime role gets only what those statements need (INSERT+SELECT on
sessions, UPDATE of `revoked_at` alone on keys). A lookup (a session, an API key: every request
makes one) is one round trip (`PgPool.read_sync`: no BEGIN and COMMIT around a lone SELECT). Errors
are tree members naming the database, never a password. This module decides nothing about who
may do what.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg

from identity.errors import ConfigurationError, Conflict, InvalidInput, NonceCacheFull
from identity.state.nonces import checked_nonce
from identity.state.protocols import ApiKeyRecord, SessionBinding, StoredApiKey
from identity.storage.postgres import PgPool, advisory_lock_key, as_query

__all__ = ["IDENTITY_MIGRATIONS", "PgApiKeyRepository", "PgNonceCache", "PgSessionRepository"]

#: The identity tables, one component each (`identity.storage.postgres.migrate` applies them).
IDENTITY_MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("session_bindings", ("""
        CREATE TABLE session_bindings (tenant_id text NOT NULL, session_id text NOT NULL, fingerprint text NOT NULL,
            user_id text NOT NULL, agent_id text NOT NULL, parent_session_id text, created_at double precision NOT NULL,
            PRIMARY KEY (tenant_id, session_id));
        GRANT SELECT, INSERT ON session_bindings TO {runtime};
    """,)),
    ("api_keys", ("""
        CREATE TABLE api_keys (key_id text PRIMARY KEY, scheme text NOT NULL, salt bytea NOT NULL, digest bytea NOT NULL,
            tenant_id text NOT NULL, user_id text NOT NULL, department_ids text[] NOT NULL, workspace_id text,
            agent_id text NOT NULL, roles text[] NOT NULL, permission_version text, label text NOT NULL DEFAULT '',
            created_at double precision NOT NULL, revoked_at double precision);
        CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at);
        GRANT SELECT, INSERT ON api_keys TO {runtime};
        GRANT UPDATE (revoked_at) ON api_keys TO {runtime};
    """, """
        CREATE TABLE api_key_uses (key_id text PRIMARY KEY, last_used_at double precision NOT NULL);
        GRANT SELECT, INSERT, UPDATE ON api_key_uses TO {runtime};
    """)),
    ("nonces", ("""
        CREATE TABLE nonces (nonce text PRIMARY KEY, expires_at double precision NOT NULL);
        CREATE INDEX nonces_by_expiry ON nonces (expires_at);
        GRANT SELECT, INSERT, UPDATE, DELETE ON nonces TO {runtime};
    """,)),
)


class _OnPool:
    """A repository over a shared pool; it closes the pool only when it owns it."""

    def __init__(self, pool: PgPool, *, owns_pool: bool = False) -> None:
        self.pool, self._owns = pool, owns_pool

    def close(self) -> None:
        if self._owns:
            self.pool.close()


class PgSessionRepository(_OnPool):
    """`SessionRepository` on PostgreSQL: bind once across every replica."""

    _COLUMNS = "tenant_id, session_id, fingerprint, user_id, agent_id, parent_session_id, created_at"
    _GET = f"SELECT {_COLUMNS} FROM session_bindings WHERE tenant_id = %s AND session_id = %s"

    def bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        b = binding

        async def run(conn: psycopg.AsyncConnection) -> SessionBinding | None:
            await conn.execute(
                f"INSERT INTO session_bindings ({self._COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (b.tenant_id, b.session_id, b.fingerprint, b.user_id, b.agent_id, b.parent_session_id, b.created_at),
            )
            return await self._get(conn, b.tenant_id, b.session_id)  # a new statement: sees a racing winner's commit

        stored = self.pool.run_sync(run, "session registry")
        if stored is None:
            raise ConfigurationError(f"session registry at {self.pool.where} lost a binding it just stored")
        return stored

    async def _get(self, conn: psycopg.AsyncConnection, tenant_id: str, session_id: str) -> SessionBinding | None:
        cur = await conn.execute(as_query(self._GET), (tenant_id, session_id))
        row = await cur.fetchone()
        return SessionBinding(*row) if row else None

    def get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        (rows,) = self.pool.read_sync([(self._GET, (tenant_id, session_id))], "session registry")
        return SessionBinding(*rows[0]) if rows else None


class PgApiKeyRepository(_OnPool):
    """`ApiKeyRepository` on PostgreSQL: a key id is never reused; a revocation is final and
    seen by every replica at its next lookup (no cache)."""

    _COLUMNS = ("key_id, tenant_id, user_id, department_ids, workspace_id, agent_id, roles, permission_version, label, created_at, revoked_at,"
                " (SELECT last_used_at FROM api_key_uses u WHERE u.key_id = api_keys.key_id)")

    @staticmethod
    def _record(row: Sequence[Any]) -> ApiKeyRecord:
        key_id, tenant, user, departments, workspace, agent, roles, version, label, created, revoked, used = row
        return ApiKeyRecord(key_id, tenant, user, frozenset(departments), workspace, agent, frozenset(roles), version, label, created, revoked, used)

    def insert(self, key: StoredApiKey) -> None:
        r = key.record

        async def run(conn: psycopg.AsyncConnection) -> bool:
            cur = await conn.execute(
                "INSERT INTO api_keys (key_id, scheme, salt, digest, tenant_id, user_id, department_ids, workspace_id, agent_id, roles,"
                " permission_version, label, created_at, revoked_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                (r.key_id, key.scheme, key.salt, key.digest, r.tenant_id, r.user_id, sorted(r.department_ids), r.workspace_id,
                 r.agent_id, sorted(r.roles), r.permission_version, r.label, r.created_at, r.revoked_at),
            )
            return cur.rowcount == 1

        if not self.pool.run_sync(run, "API key store"):
            raise Conflict(f"API key id {r.key_id} already exists")

    _LOOKUP = f"SELECT scheme, salt, digest, {_COLUMNS} FROM api_keys WHERE key_id = %s"

    def lookup(self, key_id: str) -> StoredApiKey | None:
        (rows,) = self.pool.read_sync([(self._LOOKUP, (key_id,))], "API key store")
        return self._stored(rows)

    async def lookup_async(self, key_id: str) -> StoredApiKey | None:
        """The same one-round-trip read, awaited: the door's event loop serves other requests
        while it is on the wire."""
        (rows,) = await self.pool.read([(self._LOOKUP, (key_id,))], "API key store")
        return self._stored(rows)

    def _stored(self, rows: Sequence[Sequence[Any]]) -> StoredApiKey | None:
        if not rows:
            return None
        row = rows[0]
        return StoredApiKey(record=self._record(row[3:]), scheme=row[0], salt=bytes(row[1]), digest=bytes(row[2]))

    def revoke(self, key_id: str, at: float) -> bool:
        async def run(conn: psycopg.AsyncConnection) -> bool:
            cur = await conn.execute("UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL", (at, key_id))
            return cur.rowcount == 1

        return self.pool.run_sync(run, "API key store")

    def touch(self, key_id: str, at: float) -> None:
        async def run(conn: psycopg.AsyncConnection) -> None:
            await conn.execute(
                "INSERT INTO api_key_uses (key_id, last_used_at) VALUES (%s, %s)"
                " ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(api_key_uses.last_used_at, EXCLUDED.last_used_at)", (key_id, at),
            )

        self.pool.run_sync(run, "API key store")

    def records(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        where, args = (" WHERE api_keys.tenant_id = %s", (tenant_id,)) if tenant_id is not None else ("", ())
        (rows,) = self.pool.read_sync([(f"SELECT {self._COLUMNS} FROM api_keys{where} ORDER BY created_at", args)], "API key store")
        return [self._record(r) for r in rows]


class PgNonceCache(_OnPool):
    """`NonceCache` on PostgreSQL: one atomic statement per check, shared by every replica.
    Each call also deletes up to `purge_batch` expired rows. `max_entries` (None: no cap, the
    database's disk is the limit) is enforced under an advisory lock so it is exact; full means
    `NonceCacheFull` (retryable) — a live nonce is never evicted."""

    def __init__(self, pool: PgPool, clock: Callable[[], float] = time.time, *, max_entries: int | None = None,
                 purge_batch: int = 64, owns_pool: bool = False) -> None:
        if max_entries is not None and max_entries < 1:
            raise ConfigurationError("max_entries must be at least 1 (or None for no cap)")
        super().__init__(pool, owns_pool=owns_pool)
        self._clock, self._max, self._batch = clock, max_entries, purge_batch

    def check_and_remember(self, nonce: str, expires_at: float) -> bool:
        return self.pool.run_sync(self._checking(nonce, expires_at), "nonce cache")

    async def check_and_remember_async(self, nonce: str, expires_at: float) -> bool:
        """The same transaction, awaited from the caller's loop (the pool runs it on its own)."""
        return await self.pool.run(self._checking(nonce, expires_at), "nonce cache")

    def _checking(self, nonce: str, expires_at: float) -> Callable[[psycopg.AsyncConnection], Awaitable[bool]]:
        """The check-and-insert of `nonce` as one transaction's body, its arguments checked now."""
        nonce, expires_at = checked_nonce(nonce, expires_at)
        if "\x00" in nonce:
            raise InvalidInput("a nonce must not contain NUL")
        now = self._clock()

        async def run(conn: psycopg.AsyncConnection) -> bool:
            await conn.execute(
                "DELETE FROM nonces WHERE nonce IN (SELECT nonce FROM nonces WHERE expires_at <= %s ORDER BY expires_at LIMIT %s FOR UPDATE SKIP LOCKED)",
                (now, self._batch),
            )
            if expires_at <= now:  # dead on arrival: refused only while a live entry exists
                row = await (await conn.execute("SELECT 1 FROM nonces WHERE nonce = %s AND expires_at > %s", (nonce, now))).fetchone()
                return row is None
            if self._max is not None:
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_lock_key(self.pool.schema + "/nonce-cap"),))
                live = await (await conn.execute("SELECT 1 FROM nonces WHERE nonce = %s", (nonce,))).fetchone()
                if live is None:
                    (count, first) = await (await conn.execute("SELECT count(*), min(expires_at) FROM nonces WHERE expires_at > %s", (now,))).fetchone()  # type: ignore[misc]
                    if count >= self._max:
                        raise NonceCacheFull(f"gateway replay cache at {self.pool.where} is full ({self._max} live nonces); retry when some expire",
                                             retry_after=max(1.0, (first or now) - now))
            cur = await conn.execute(
                "INSERT INTO nonces (nonce, expires_at) VALUES (%s, %s) ON CONFLICT (nonce) DO UPDATE SET expires_at = excluded.expires_at"
                " WHERE nonces.expires_at <= %s RETURNING 1",
                (nonce, expires_at, now),
            )
            return (await cur.fetchone()) is not None

        return run

    def __len__(self) -> int:
        async def run(conn: psycopg.AsyncConnection) -> int:
            return int((await (await conn.execute("SELECT count(*) FROM nonces")).fetchone())[0])  # type: ignore[index]

        return self.pool.run_sync(run, "nonce cache")
