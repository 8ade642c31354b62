"""The project's one PostgreSQL plumbing: a shared connection pool and the migration runner.

Everything that keeps state on PostgreSQL builds on this module: identity state (sessions, API
keys, nonces: `identity.state.postgres`), the bridge's state, the PostgreSQL memory backend and
the OpenViking key store on PostgreSQL. It lives in `identity`, the bottom layer, only so every
package can use it without a dependency cycle; it knows nothing of identities.

`PgPool` is ONE async psycopg pool running on a private event-loop thread. The identity
protocols are synchronous (admin commands, the CLI, worker threads), with async twins for what
the service's door asks on its event loop (an API key's lookup, a gateway nonce's check), and
the bridge's state protocols are async; all submit coroutines to that thread (`run_sync` blocks
the caller, `run` awaits from any loop), so one pool serves both and no caller can deadlock its
own loop, and none on an event loop has to block it.
`read` is the short path for a fixed list of reads (a recall: declare the ScopeSet, then query;
the state's and the identity stores' lookups; `read_sync` for blocking callers):
every statement queued at once in pipeline mode and one Sync after the last, so they run in ONE
implicit transaction (a `set_config(..., true)` holds for the statements after it and ends with
it) in one network round trip, without the BEGIN and COMMIT round trips of `run`, on blocking
connections of its own driven from worker threads (identity/storage/pgreads.py).
Driver: psycopg 3 (sync and async in one libpq-based driver, a maintained pool, pgvector's
adapter, libpq's URL/sslmode/service-file semantics) rather than asyncpg (async only).

`apply_pg_migrations` is `identity.storage.migrations`' PostgreSQL twin: per-component versions
in `<schema>.schema_version`; pending steps and their version rows commit in ONE transaction
(PostgreSQL DDL is transactional) taken under `pg_advisory_xact_lock` on the schema, so two
replicas starting together serialise and the second finds nothing left to apply. A version
newer than the code raises `IncompatibleSchema`; nothing is written.

What it must never do: put a password in a message (`describe_url` names host, port and
database only), leave a raw driver exception for a caller to interpret (`map_error`), or decide
who may do what.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, LiteralString, TypeVar, cast
from urllib.parse import urlsplit

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from identity.errors import ConfigurationError, IncompatibleSchema, InvalidInput, StorageUnavailable, VikingBridgeError
from identity.storage.pgreads import PgReader

__all__ = [
    "as_query",
    "PgPool", "apply_pg_migrations", "schema_is_current", "migrate", "describe_url", "map_error", "advisory_lock_key",
    "DEFAULT_SCHEMA", "DEFAULT_RUNTIME_ROLE",
]

T = TypeVar("T")
#: one statement of `PgPool.read`: its text and its parameters (None: none)
Statement = tuple[str, "Sequence[Any] | Mapping[str, Any] | None"]
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


def as_query(text: str) -> LiteralString:
    """A statement built by our own code from fixed fragments (never from a caller's input: values
    travel as parameters), typed as the literal SQL psycopg's API asks for."""
    return cast(LiteralString, text)


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
                 configure: Callable[[psycopg.AsyncConnection], Awaitable[None]] | None = None,
                 configure_blocking: Callable[[psycopg.Connection[Any]], None] | None = None) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise ConfigurationError("a PostgreSQL URL starts with postgresql://")
        self.url, self.schema, self.where = url, schema, describe_url(url)
        self.max_size, self.timeout = max_size, timeout
        self._extra_configure = configure
        self._configure_blocking = configure_blocking
        self._reader: PgReader | None = None  # `read`'s connections, made on its first call
        self._reader_lock = threading.Lock()
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

    async def read(self, statements: Sequence[Statement], what: str = "PostgreSQL state") -> list[list[tuple[Any, ...]]]:
        """Run `statements` in order in ONE implicit transaction and one round trip; return each
        one's rows ([] for a statement that returns none). For reads only; a `set_config(..., true)`
        among them binds the ones after it and ends with the read. They run on blocking
        connections of their own (`configure_blocking` sets them up), from worker threads:
        identity/storage/pgreads.py says why and how."""
        if self._closed:
            raise StorageUnavailable(f"{what} at {self.where} is closed", path=self.where)
        try:
            return await asyncio.wrap_future(self._reads().submit(statements))
        except BaseException as exc:
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
                raise
            raise map_error(exc, self.where, what) from None

    def read_sync(self, statements: Sequence[Statement], what: str = "PostgreSQL state") -> list[list[tuple[Any, ...]]]:
        """`read` for blocking callers (the identity protocols): the same one round trip on one of
        `read`'s blocking connections, in the caller's own thread (no hop to a worker or to the
        pool's loop), where `run_sync` would spend three round trips (BEGIN, the query, COMMIT)."""
        if self._closed:
            raise StorageUnavailable(f"{what} at {self.where} is closed", path=self.where)
        try:
            return self._reads().read(statements)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise map_error(exc, self.where, what) from None

    def _reads(self) -> PgReader:
        if self._reader is None:
            with self._reader_lock:
                if self._reader is None:
                    self._reader = PgReader(self.url, schema=self.schema, max_size=self.max_size, timeout=self.timeout, name=self.where,
                                            configure=self._configure_blocking)
        return self._reader

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
        if self._reader is not None:
            self._reader.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._loop.is_running():
            self._loop.close()

    def __repr__(self) -> str:
        return f"PgPool({self.where!r}, schema={self.schema!r})"


# --------------------------------------------------------------------------- migrations
def advisory_lock_key(schema: str) -> int:
    """The 64-bit advisory-lock key for `schema` (migrations and every exact cap on it take this lock)."""
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
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_lock_key(schema),))
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
