"""Identity state on PostgreSQL, shared by every replica: sessions, API keys, nonces — plus the
one connection pool and the migration runner the bridge's PostgreSQL state builds on.

Why PostgreSQL: several service replicas must see one session binding, one revocation, one
nonce; a SQLite file on one machine cannot be shared between machines.

`PgPool` is ONE async psycopg pool running on a private event-loop thread. The identity
protocols are synchronous (they are called from inside the bridge's event loop), the bridge's
state protocols are async; both submit coroutines to that thread (`run_sync` blocks the caller,
`run` awaits from any loop), so one pool serves both and no caller can deadlock its own loop.
Driver: psycopg 3 (sync and async in one libpq-based driver, a maintained pool, pgvector's
adapter, libpq's URL/sslmode/service-file semantics) rather than asyncpg (async only).

`apply_pg_migrations` is identity.migrations' PostgreSQL twin: per-component versions in
`<schema>.schema_version`; pending steps and their version rows commit in ONE transaction
(PostgreSQL DDL is transactional) taken under `pg_advisory_xact_lock` on the schema, so two
replicas starting together serialise and the second finds nothing left to apply. A version
newer than the code raises `IncompatibleSchema`; nothing is written.

Integrity rules (`identity.state`) in SQL: bind-once is INSERT .. ON CONFLICT DO NOTHING +
read-back; a revocation is UPDATE .. WHERE revoked_at IS NULL; check-and-remember is one
INSERT .. ON CONFLICT DO UPDATE WHERE expired RETURNING (the row lock picks one winner across
replicas). The runtime role gets only what those statements need (INSERT+SELECT on sessions,
UPDATE of `revoked_at` alone on keys). Errors are tree members naming the database, never a
password. This module decides nothing about who may do what.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from identity.errors import ConfigurationError, Conflict, IncompatibleSchema, InvalidInput, NonceCacheFull, StorageUnavailable, VikingBridgeError
from identity.nonces import _checked as _checked_nonce
from identity.state import ApiKeyRecord, SessionBinding, StoredApiKey

__all__ = [
    "PgPool", "apply_pg_migrations", "describe_url", "PgSessionRepository", "PgApiKeyRepository", "PgNonceCache",
    "IDENTITY_MIGRATIONS", "DEFAULT_SCHEMA", "DEFAULT_RUNTIME_ROLE",
]

T = TypeVar("T")
DEFAULT_SCHEMA = "viking_bridge"
#: The role the migrations grant the runtime privileges to (the replicas log in as a member of it).
DEFAULT_RUNTIME_ROLE = "viking_bridge_runtime"
_RETRYABLE = (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected)


def describe_url(url: str) -> str:
    """`host:port/db` of a connection URL, for messages (never the user's password)."""
    try:
        parts = urlsplit(url)
        return f"postgresql://{parts.hostname or 'localhost'}{':' + str(parts.port) if parts.port else ''}{parts.path or '/'}"
    except ValueError:
        return "postgresql://<unparseable url>"


def map_error(exc: BaseException, where: str, what: str) -> VikingBridgeError:
    """A driver error as a member of the tree (the caller raises it `from None`)."""
    if isinstance(exc, VikingBridgeError):
        return exc
    if isinstance(exc, (PoolTimeout, psycopg.OperationalError, TimeoutError, ConnectionError)):
        return StorageUnavailable(f"{what} at {where} is unreachable or overloaded ({type(exc).__name__})", path=where)
    if isinstance(exc, psycopg.DataError):  # a value PostgreSQL cannot hold (NUL in text, out of range)
        return InvalidInput(f"{what} at {where} cannot store a value: {exc.diag.message_primary}")
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return ConfigurationError(f"{what} at {where}: the runtime role lacks a privilege ({exc.diag.message_primary}); see docs/deploying.md")
    if isinstance(exc, (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn, psycopg.errors.InvalidSchemaName)):
        return ConfigurationError(f"{what} at {where}: the schema is missing or not migrated ({exc.diag.message_primary})")
    if isinstance(exc, psycopg.Error):
        return ConfigurationError(f"{what} at {where} failed: {type(exc).__name__}: {getattr(exc.diag, 'message_primary', '') or exc}")
    return ConfigurationError(f"{what} at {where} failed: {type(exc).__name__}")


class PgPool:
    """One async pool on a private loop thread (see the module docstring). `schema` becomes the
    search_path of every connection, so all SQL names tables unqualified."""

    def __init__(self, url: str, *, schema: str = DEFAULT_SCHEMA, min_size: int = 1, max_size: int = 8, timeout: float = 10.0,
                 configure: Callable[[psycopg.AsyncConnection], Awaitable[None]] | None = None) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise ConfigurationError("a PostgreSQL URL starts with postgresql://")
        self.url, self.schema, self.where = url, schema, describe_url(url)
        self._extra_configure = configure
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"pg-pool {self.where}", daemon=True)
        self._thread.start()
        self._closed = False
        self._pool = AsyncConnectionPool(url, min_size=min_size, max_size=max_size, timeout=timeout, open=False,
                                         kwargs={"autocommit": True}, configure=self._configure)
        try:
            self._submit(self._pool.open(wait=True, timeout=timeout)).result()
        except BaseException as exc:
            self.close()
            raise map_error(exc, self.where, "PostgreSQL") from None

    async def _configure(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(sql.SQL("SET search_path TO {}, pg_catalog").format(sql.Identifier(self.schema)))
        if self._extra_configure is not None:
            await self._extra_configure(conn)

    def _submit(self, coro: Awaitable[T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]

    async def _transact(self, fn: Callable[[psycopg.AsyncConnection], Awaitable[T]], what: str) -> T:
        for attempt in range(5):
            try:
                async with self._pool.connection() as conn:
                    async with conn.transaction():
                        return await fn(conn)
            except _RETRYABLE:
                await asyncio.sleep(0.01 * (attempt + 1))
            except BaseException as exc:
                if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
                    raise
                raise map_error(exc, self.where, what) from None
        raise StorageUnavailable(f"{what} at {self.where}: too many serialisation conflicts", path=self.where)

    def run_sync(self, fn: Callable[[psycopg.AsyncConnection], Awaitable[T]], what: str = "PostgreSQL state") -> T:
        """Run `fn(conn)` in one transaction and wait (blocking callers: the identity protocols)."""
        if self._closed:
            raise StorageUnavailable(f"{what} at {self.where} is closed", path=self.where)
        if threading.current_thread() is self._thread:
            raise ConfigurationError("PgPool.run_sync called from the pool's own loop")
        return self._submit(self._transact(fn, what)).result()

    async def run(self, fn: Callable[[psycopg.AsyncConnection], Awaitable[T]], what: str = "PostgreSQL state") -> T:
        """Run `fn(conn)` in one transaction from any event loop."""
        if self._closed:
            raise StorageUnavailable(f"{what} at {self.where} is closed", path=self.where)
        return await asyncio.wrap_future(self._submit(self._transact(fn, what)))

    async def _shutdown(self) -> None:
        await self._pool.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:  # the pool's workers: finish them, so no task dies pending with the loop
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._submit(self._shutdown()).result(timeout=15)
        except Exception:  # closing is best effort; the loop goes anyway
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._loop.is_running():
            self._loop.close()

    def __repr__(self) -> str:
        return f"PgPool({self.where!r}, schema={self.schema!r})"


# --------------------------------------------------------------------------- migrations
def _lock_key(schema: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"viking-bridge/migrate/{schema}".encode(), digest_size=8).digest(), "big", signed=True)


async def _current(conn: psycopg.AsyncConnection, component: str) -> int:
    exists = await (await conn.execute("SELECT to_regclass('schema_version') IS NOT NULL")).fetchone()
    if not exists or not exists[0]:
        return 0
    row = await (await conn.execute("SELECT MAX(version) FROM schema_version WHERE component = %s", (component,))).fetchone()
    return int(row[0] or 0) if row else 0


async def schema_is_current(conn: psycopg.AsyncConnection, schema: str, component: str, target: int) -> bool:
    """True when `component` in `schema` is exactly at `target` (read without any lock)."""
    table = sql.Identifier(schema, "schema_version").as_string(None)
    if not (await (await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))).fetchone())[0]:  # type: ignore[index]
        return False
    row = await (await conn.execute(sql.SQL("SELECT MAX(version) FROM {} WHERE component = %s").format(sql.Identifier(schema, "schema_version")), (component,))).fetchone()
    return bool(row) and int(row[0] or 0) == target  # type: ignore[index]


async def apply_pg_migrations(conn: psycopg.AsyncConnection, schema: str, component: str, migrations: Sequence[str],
                              *, runtime_role: str = DEFAULT_RUNTIME_ROLE, search_path: Sequence[str] = ()) -> int:
    """Bring `component` in `schema` up to `len(migrations)` inside the caller's transaction,
    under the schema's advisory lock; return how many steps ran now. Steps are SQL templates:
    `{runtime}` is replaced by the quoted runtime role (grants are part of the schema);
    `search_path` names further schemas the steps resolve names in (an extension's)."""
    target = len(migrations)
    if await schema_is_current(conn, schema, component, target):
        return 0  # fast path: no lock, no DDL (a runtime role without CREATE opens a migrated schema)
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(schema),))
    await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    await conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), sql.Identifier(runtime_role)))
    path = sql.SQL(", ").join(sql.Identifier(name) for name in (schema, *search_path))
    await conn.execute(sql.SQL("SET LOCAL search_path TO {}, pg_catalog").format(path))
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (component text NOT NULL, version integer NOT NULL,"
        " applied_at double precision NOT NULL, PRIMARY KEY (component, version))"
    )
    await conn.execute(sql.SQL("GRANT SELECT ON schema_version TO {}").format(sql.Identifier(runtime_role)))  # its fast path reads it
    current = await _current(conn, component)  # under the lock: a racing opener has committed or not begun
    if current > target:
        raise IncompatibleSchema(
            f"{schema}: the {component!r} schema is at version {current}, but this code knows only up to {target};"
            " it was written by a newer release of viking-bridge", path=schema, component=component, found=current, known=target,
        )
    runtime = sql.Identifier(runtime_role).as_string(None)
    for version in range(current + 1, target + 1):
        await conn.execute(migrations[version - 1].replace("{runtime}", runtime))  # type: ignore[arg-type]
        await conn.execute("INSERT INTO schema_version VALUES (%s, %s, %s)", (component, version, time.time()))
    return target - current


def migrate(url: str, components: Sequence[tuple[str, Sequence[str]]], *, schema: str = DEFAULT_SCHEMA,
            runtime_role: str = DEFAULT_RUNTIME_ROLE) -> dict[str, int]:
    """Apply every component's migrations over `url` (the schema owner) in one transaction."""
    pool = PgPool(url, schema=schema, min_size=1, max_size=1)
    try:
        async def run(conn: psycopg.AsyncConnection) -> dict[str, int]:
            return {name: await apply_pg_migrations(conn, schema, name, steps, runtime_role=runtime_role) for name, steps in components}

        return pool.run_sync(run, "schema migration")
    finally:
        pool.close()


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
    """,)),
    ("nonces", ("""
        CREATE TABLE nonces (nonce text PRIMARY KEY, expires_at double precision NOT NULL);
        CREATE INDEX nonces_by_expiry ON nonces (expires_at);
        GRANT SELECT, INSERT, UPDATE, DELETE ON nonces TO {runtime};
    """,)),
)


# --------------------------------------------------------------------------- repositories
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
        cur = await conn.execute(f"SELECT {self._COLUMNS} FROM session_bindings WHERE tenant_id = %s AND session_id = %s", (tenant_id, session_id))
        row = await cur.fetchone()
        return SessionBinding(*row) if row else None

    def get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        return self.pool.run_sync(lambda conn: self._get(conn, tenant_id, session_id), "session registry")


class PgApiKeyRepository(_OnPool):
    """`ApiKeyRepository` on PostgreSQL: a key id is never reused; a revocation is final and
    seen by every replica at its next lookup (no cache)."""

    _COLUMNS = "key_id, tenant_id, user_id, department_ids, workspace_id, agent_id, roles, permission_version, label, created_at, revoked_at"

    @staticmethod
    def _record(row: Sequence[Any]) -> ApiKeyRecord:
        key_id, tenant, user, departments, workspace, agent, roles, version, label, created, revoked = row
        return ApiKeyRecord(key_id, tenant, user, frozenset(departments), workspace, agent, frozenset(roles), version, label, created, revoked)

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

    def lookup(self, key_id: str) -> StoredApiKey | None:
        async def run(conn: psycopg.AsyncConnection) -> StoredApiKey | None:
            row = await (await conn.execute(f"SELECT scheme, salt, digest, {self._COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,))).fetchone()
            if row is None:
                return None
            return StoredApiKey(record=self._record(row[3:]), scheme=row[0], salt=bytes(row[1]), digest=bytes(row[2]))

        return self.pool.run_sync(run, "API key store")

    def revoke(self, key_id: str, at: float) -> bool:
        async def run(conn: psycopg.AsyncConnection) -> bool:
            cur = await conn.execute("UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL", (at, key_id))
            return cur.rowcount == 1

        return self.pool.run_sync(run, "API key store")

    def records(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        async def run(conn: psycopg.AsyncConnection) -> list[ApiKeyRecord]:
            where, args = (" WHERE tenant_id = %s", (tenant_id,)) if tenant_id is not None else ("", ())
            cur = await conn.execute(f"SELECT {self._COLUMNS} FROM api_keys{where} ORDER BY created_at", args)
            return [self._record(r) for r in await cur.fetchall()]

        return self.pool.run_sync(run, "API key store")


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
        nonce, expires_at = _checked_nonce(nonce, expires_at)
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
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.pool.schema + "/nonce-cap"),))
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

        return self.pool.run_sync(run, "nonce cache")

    def __len__(self) -> int:
        async def run(conn: psycopg.AsyncConnection) -> int:
            return int((await (await conn.execute("SELECT count(*) FROM nonces")).fetchone())[0])  # type: ignore[index]

        return self.pool.run_sync(run, "nonce cache")
