"""The PostgreSQL + pgvector memory backend: one table, two walls.

Never decides who may see what: it stores into the ScopeKey it is given and reads exactly the
ScopeSet it is given — twice over. Every statement (1) names the ScopeSet in its WHERE clause and
(2) runs in a transaction that first declares the same ScopeSet to the database
(`set_config(..., true)`, i.e. `SET LOCAL`), which the table's row-level-security policy
enforces (adapters/postgres/schema.py). A query that lost its filter (a bug, a refactor) still
returns nothing outside the ScopeSet. A read (a search, a get, a listing, the idempotency check
of a write) sends its declaration and its queries together (`PgPool.read`: pipelined, one
implicit transaction, one round trip); writes run in transactions. For that second wall to hold, the runtime role must not be
a superuser, must not have BYPASSRLS and must not own the table (nor be a member of its owner);
`open()` checks all three and refuses with `BackendMisconfigured`.

Recall is exact top-k: filter to the permitted scopes, then order by inner product with the
query vector (`<#>`) — recall 1.0 by construction, no ANN index involved. The permitted scopes'
vectors are read from a covering index kept in scope order (adapters/postgres/locality.py), so a
search reads the ScopeSet's index pages, not a heap page per row. For a
very large scope an operator may opt in to approximate search (`create_ann_index`: a partial
HNSW index on that scope alone, searched in its own branch; the other scopes stay exact).
Scores are the inner product of L2-normalised vectors clipped to [0, 1], as the local store's.

Idempotency: UNIQUE (scope, idempotency_key); a retried put returns the first record with
`created=False`, the same key with other content is `BackendConflict`. `list_page` walks a scope by
the row's identity column (keyset), with HMAC cursors bound to the scope and keyed by a secret
every replica shares (`backend_meta`), so a page started on one replica continues on another.
A stored row that does not decode is dropped and alarmed (`RecordAlarms`), never returned.
Text PostgreSQL cannot store (NUL, lone surrogates) is `InvalidRequest` before any write.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import secrets
import threading
import time
import uuid
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np
import psycopg
from psycopg import sql

from adapters.base import (
    Capabilities, Hit, ListPage, MemoryPatch, NewMemory, Provenance, SearchQuery, SearchResult, Status, StoredMemory,
    require_scope, require_scope_set,
)
from adapters.shared.cursor import CursorCodec
from adapters.shared.embedding import Embedder, HashingEmbedder
from adapters.shared.envelope import RecordAlarms
from adapters.errors import BackendMisconfigured, BackendConflict, EmbedderMismatch, InvalidRequest, BackendNotFound, BackendUnavailable, UnsupportedFilter
from adapters.postgres.lexical import (
    FUSION_DEPTH, fuse_ranked, lexical_statement, lexical_words, rows_statement, tagged_terms,
)
from adapters.postgres.declare import declaration, declare
from adapters.postgres.documents import document
from adapters.postgres.lists import joined
from adapters.postgres.recall import COLUMNS, M_COLUMNS, candidates, checked_limit, checked_statuses, search_params, similarity, vector_statement
from adapters.postgres.schema import COMPONENT, MEMORY_MIGRATIONS, TENANT_SETTING
from adapters.scopes import ScopeKey, ScopeSet
from identity.errors import VikingBridgeError
from identity.storage.postgres import DEFAULT_SCHEMA, PgPool, apply_pg_migrations, schema_is_current

__all__ = ["PostgresBackend"]

Conn = psycopg.AsyncConnection
_MAX_PAGE = 10_000
_STATUSES = {s.value: s for s in Status}
_EXTENSION_SCHEMA = "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequest(f"{what} must be a string", backend="postgres")
    if "\x00" in value:
        raise InvalidRequest(f"{what} contains a NUL character (PostgreSQL text cannot hold it)", backend="postgres")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(f"{what} contains a lone surrogate (not valid Unicode text)", backend="postgres") from None
    return value


def _json(value: Any, what: str) -> str:
    try:
        return _text(json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False), what)
    except ValueError as exc:
        raise InvalidRequest(f"{what} cannot be stored: {exc}", backend="postgres") from None


def _content_hash(m: NewMemory) -> str:
    return hashlib.sha256(_json([m.content, m.kind, m.status.value, dict(m.metadata)], "memory").encode()).hexdigest()


class PostgresBackend:
    """Memories in PostgreSQL with pgvector; see the module docstring for the guarantees.

    `url` is the runtime role; `migrate_url` (the schema owner) applies the schema at open under
    an advisory lock and grants the runtime role what it needs (`runtime_role`, default the user
    of `url`). The first call opens it; `open()` / `open_sync()` do it up front (start-up errors early)."""

    name = "postgres"
    #: False: `search` is the vector channel alone (benchmarks compare the two)
    lexical_channel: bool = True
    capabilities = Capabilities(memory_id_restriction=True, list_scopes=True, supported_filters=frozenset())

    def __init__(self, url: str, *, migrate_url: str | None = None, runtime_role: str | None = None, schema: str = DEFAULT_SCHEMA,
                 embedder: Embedder | None = None, pool_size: int = 8, ann_ef_search: int = 100) -> None:
        self.url, self.migrate_url, self.schema = url, migrate_url, schema
        self.runtime_role = runtime_role
        self.embedder: Embedder = embedder or HashingEmbedder()
        self.pool_size = pool_size
        self.alarms = RecordAlarms("postgres")
        self._pool: PgPool | None = None
        self._codec: CursorCodec | None = None
        self._open_lock = threading.Lock()
        self._closed = False
        self.store_id: str | None = None
        self.ann_ef_search = ann_ef_search
        self._ann_scopes: frozenset[str] = frozenset()  # scopes with a partial HNSW index (backend_meta `ann:<scope>`)

    @classmethod
    async def create(cls, url: str, **kwargs: Any) -> "PostgresBackend":
        backend = cls(url, **kwargs)
        await backend.open()
        return backend

    # -- open: migrate, then refuse a runtime role that could bypass the policy ------------
    async def open(self) -> None:
        """Migrate (as the owner) and open the runtime pool; idempotent. Blocks briefly: the
        work runs on the pool's own thread, so this is safe from any event loop or none."""
        self.open_sync()

    def open_sync(self) -> None:
        """`open()` for callers without an event loop (`open_bridge` builds parts synchronously)."""
        with self._open_lock:
            if self._pool is None:
                self._open_locked()

    def _open_locked(self) -> None:
        from urllib.parse import unquote, urlsplit

        role = self.runtime_role or unquote(urlsplit(self.url).username or "")
        if not role:
            raise BackendMisconfigured("the PostgreSQL URL names no user; the runtime role must be explicit", backend=self.name)
        steps = tuple(s.replace("{dim}", str(int(self.embedder.dimension))) for s in MEMORY_MIGRATIONS)
        meta = {"store_id": uuid.uuid4().hex, "embedder": self.embedder.signature, "cursor_key": secrets.token_hex(32)}

        async def migrate(conn: Conn) -> None:
            if await schema_is_current(conn, self.schema, COMPONENT, len(steps)):
                return  # nothing to do: no DDL, so a runtime-only URL opens a migrated store
            await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # needs a superuser once, where it is not installed
            where = await (await conn.execute(_EXTENSION_SCHEMA)).fetchone()
            await apply_pg_migrations(conn, self.schema, COMPONENT, steps, runtime_role=role, search_path=[where[0]] if where else [])
            for name, value in meta.items():
                await conn.execute("INSERT INTO backend_meta (name, value) VALUES (%s, %s) ON CONFLICT DO NOTHING", (name, value))

        owner = PgPool(self.migrate_url or self.url, schema=self.schema, min_size=1, max_size=1)
        try:
            owner.run_sync(migrate, "memory store migration")
        finally:
            owner.close()
        pool = PgPool(self.url, schema=self.schema, max_size=self.pool_size, configure=self._configure, configure_blocking=self._configure_blocking)
        try:
            stored = dict(pool.run_sync(self._check_runtime_role, "memory store"))
        except BaseException:
            pool.close()
            raise
        if stored.get("embedder") != self.embedder.signature:
            pool.close()
            raise EmbedderMismatch(f"the store was built with {stored.get('embedder')!r}, not {self.embedder.signature!r}", backend=self.name)
        self.store_id = stored["store_id"]
        self._ann_scopes = frozenset(name[4:] for name in stored if name.startswith("ann:"))
        self._codec = CursorCodec(bytes.fromhex(stored["cursor_key"]), backend=self.name)
        self._pool = pool

    async def _configure(self, conn: Conn) -> None:
        """Let the `vector` type and its operators resolve wherever the extension lives."""
        row = await (await conn.execute(_EXTENSION_SCHEMA)).fetchone()
        if row is not None:
            await conn.execute(sql.SQL("SET search_path TO {}, {}, pg_catalog").format(sql.Identifier(self.schema), sql.Identifier(row[0])))
        from pgvector.psycopg import register_vector_async

        await register_vector_async(conn)

    def _configure_blocking(self, conn: psycopg.Connection[Any]) -> None:
        """`_configure` for the blocking connections of the pool's reads (every search)."""
        row = conn.execute(_EXTENSION_SCHEMA).fetchone()
        if row is not None:
            conn.execute(sql.SQL("SET search_path TO {}, {}, pg_catalog").format(sql.Identifier(self.schema), sql.Identifier(row[0])))
        from pgvector.psycopg import register_vector

        register_vector(conn)

    async def _check_runtime_role(self, conn: Conn) -> list[tuple[str, str]]:
        row = await (await conn.execute(
            "SELECT r.rolsuper, r.rolbypassrls, pg_has_role(current_user, c.relowner, 'USAGE'), c.relforcerowsecurity"
            " FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = 'memories'::regclass"
        )).fetchone()
        if row is None:
            raise BackendMisconfigured("cannot inspect the runtime role or the memories table", backend=self.name)
        superuser, bypass, owner, forced = row
        if superuser or bypass or owner or not forced:
            why = "is a superuser" if superuser else "has BYPASSRLS" if bypass else "owns the memories table (or is a member of its owner)" if owner else "finds RLS not forced"
            raise BackendMisconfigured(
                f"refusing to serve memories: the runtime role {why}, so row-level security would not bind it;"
                " connect as a role without those rights (docs/deploying.md)", backend=self.name,
            )
        return [tuple(r) for r in await (await conn.execute("SELECT name, value FROM backend_meta_read()")).fetchall()]  # type: ignore[misc]

    def _ready(self) -> PgPool:
        if self._pool is None:
            if self._closed:
                raise BackendUnavailable("the PostgreSQL backend is closed", backend=self.name)
            self.open_sync()  # first use opens (migrations at start-up, as `open_bridge` expects)
        assert self._pool is not None
        return self._pool

    async def _run(self, fn: Any, what: str = "memory store") -> Any:
        return await self._ready().run(fn, what)

    # -- decoding ---------------------------------------------------------------------------
    def _decode(self, row: Sequence[Any], expected: ScopeKey | None = None, *, keys: Mapping[str, ScopeKey] | None = None) -> StoredMemory | None:
        """A row as a StoredMemory, or None (dropped + alarmed) when it does not decode or is
        not from the scope it was read for. `keys`: scope keys by their text, taken as they are
        instead of parsing the row's (a search's own ScopeSet: `str(key)` is the stored text)."""
        _, mid, scope_text, content, kind, status, confidence, prov, subject, meta, created, updated, expires = row
        try:
            scope = keys.get(scope_text) if keys is not None else None
            if scope is None:
                scope = ScopeKey.parse(scope_text)
            if expected is not None and scope != expected:
                raise ValueError("row from another scope than the one read")
            metadata = document(meta)
            if not isinstance(metadata, dict):
                raise ValueError("metadata is not an object")
            return StoredMemory(
                id=mid, scope=scope, content=content, kind=kind, status=_STATUSES[status], confidence=float(confidence),
                provenance=Provenance.from_dict(document(prov)), subject_user_id=subject, metadata=MappingProxyType(metadata),
                created_at=float(created), updated_at=float(updated), expires_at=None if expires is None else float(expires),
            )
        except (ValueError, KeyError, TypeError) as exc:
            self.alarms.raise_alarm(scope_text, f"row {mid!r} does not decode ({type(exc).__name__})")
            return None

    async def _embed(self, texts: list[str]) -> np.ndarray:
        try:
            vectors = np.asarray(await self.embedder.embed(texts), dtype=np.float32)
        except VikingBridgeError:
            raise
        except Exception as exc:
            raise BackendUnavailable(f"the embedder failed: {type(exc).__name__}", backend=self.name) from exc
        if vectors.shape != (len(texts), self.embedder.dimension) or not np.isfinite(vectors).all():
            raise BackendUnavailable(f"the embedder returned {vectors.shape} or non-finite values", backend=self.name)
        return vectors

    # -- writes -----------------------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        (stored,) = await self.put_many([(scope, memory, idempotency_key)])
        return stored

    def _prepared(self, scope: ScopeKey, memory: NewMemory, idempotency_key: str) -> tuple[StoredMemory, str, str, str, str]:
        require_scope(scope)
        key = _text(idempotency_key, "idempotency_key")
        if not key:
            raise InvalidRequest("idempotency_key must be a non-empty string", backend=self.name)
        if not isinstance(memory, NewMemory) or not isinstance(memory.provenance, Provenance) or not isinstance(memory.status, Status):
            raise InvalidRequest("put expects a NewMemory with a Provenance and a Status", backend=self.name)
        if not isinstance(memory.kind, str) or not memory.kind:
            raise InvalidRequest("kind must be a non-empty string", backend=self.name)
        _text(memory.content, "content"), _text(memory.kind, "kind")
        if memory.subject_user_id is not None:
            _text(memory.subject_user_id, "subject_user_id")
        if memory.created_at is not None and (isinstance(memory.created_at, bool) or not isinstance(memory.created_at, (int, float)) or not math.isfinite(memory.created_at)):
            raise InvalidRequest("created_at must be a finite number of epoch seconds", backend=self.name)
        if memory.expires_at is not None and (isinstance(memory.expires_at, bool) or not isinstance(memory.expires_at, (int, float)) or not math.isfinite(memory.expires_at)):
            raise InvalidRequest("expires_at must be a finite number of epoch seconds", backend=self.name)
        stored = StoredMemory.from_new(uuid.uuid4().hex, scope, memory, time.time())
        return stored, key, _json(memory.provenance.to_dict(), "provenance"), _json(dict(memory.metadata), "metadata"), _content_hash(memory)

    async def put_many(self, items: Sequence[tuple[ScopeKey, NewMemory, str]]) -> list[StoredMemory]:
        """Store many memories in ONE transaction (all land, or none do); each result says
        whether this call created it. The transaction declares exactly the batch's scopes."""
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, tuple) and len(i) == 3 for i in items):
            raise InvalidRequest("put_many expects (scope, memory, idempotency_key) tuples", backend=self.name)
        if not items:
            return []
        prepared = [self._prepared(*item) for item in items]
        vectors = await self._embed([p[0].content for p in prepared])
        rows = [(m.id, str(m.scope), m.scope.tenant_id, m.content, m.kind, m.status.value, m.confidence, prov, m.subject_user_id, meta,
                 m.created_at, m.updated_at, key, digest, vector, m.expires_at) for (m, key, prov, meta, digest), vector in zip(prepared, vectors)]

        async def run(conn: Conn) -> list[StoredMemory | None]:
            await declare(conn, sorted({r[1] for r in rows}))
            created: list[bool] = []
            async with conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO memories (id, scope, tenant_id, content, kind, status, confidence, provenance, subject_user_id, metadata,"
                    " created_at, updated_at, idempotency_key, content_hash, embedding, expires_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (scope, idempotency_key) DO NOTHING RETURNING seq",
                    rows, returning=True,
                )
                while True:
                    created.append(await cur.fetchone() is not None)
                    if not cur.nextset():
                        break
            out: list[StoredMemory | None] = []
            for (stored, key, _, _, digest), fresh in zip(prepared, created):
                if fresh:
                    out.append(dataclasses.replace(stored, created=True))
                    continue
                row = await (await conn.execute(
                    f"SELECT {COLUMNS}, content_hash FROM memories WHERE scope = %s AND idempotency_key = %s", (str(stored.scope), key)
                )).fetchone()
                if row is not None and row[-1] != digest:
                    raise BackendConflict(f"idempotency key {key!r} was already used for different content", backend=self.name, scope=stored.scope)
                first = None if row is None else self._decode(row[:-1], stored.scope)
                out.append(None if first is None else dataclasses.replace(first, created=False))
            return out

        results = await self._run(run)
        for (stored, key, *_), result in zip(prepared, results):
            if result is None:
                raise BackendConflict(f"idempotency key {key!r} names a record that cannot be read back", backend=self.name, scope=stored.scope)
        return results  # type: ignore[return-value]

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        require_scope(scope)
        found = await self._one(scope, memory_id) if isinstance(memory_id, str) and "\x00" not in memory_id else None
        if found is None:
            raise BackendNotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        return found

    async def _one(self, scope: ScopeKey, memory_id: str) -> StoredMemory | None:
        rows = await self._read_scope(scope, f"SELECT {COLUMNS} FROM memories WHERE scope = %s AND id = %s", (str(scope), memory_id))
        return self._decode(rows[0], scope) if rows else None

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        require_scope(scope)
        if not isinstance(patch, MemoryPatch):
            raise InvalidRequest(f"update expects MemoryPatch, got {type(patch).__name__}", backend=self.name)
        if patch.status is not None and not isinstance(patch.status, Status):
            raise InvalidRequest("patch status must be a Status", backend=self.name)
        if patch.confidence is not None and (isinstance(patch.confidence, bool) or not isinstance(patch.confidence, (int, float)) or not 0.0 <= patch.confidence <= 1.0):
            raise InvalidRequest("patch confidence must be a number in [0, 1]", backend=self.name)
        vector = (await self._embed([_text(patch.content, "content")]))[0] if patch.content is not None else None
        meta = _json(dict(patch.metadata), "metadata") if patch.metadata is not None else None
        if not isinstance(memory_id, str) or "\x00" in memory_id:
            raise BackendNotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)

        async def run(conn: Conn) -> StoredMemory | None:
            await declare(conn, [str(scope)])
            # read and write in one transaction, the row locked: a concurrent update is never lost
            row = await (await conn.execute(f"SELECT {COLUMNS} FROM memories WHERE scope = %s AND id = %s FOR UPDATE", (str(scope), memory_id))).fetchone()
            current = None if row is None else self._decode(row, scope)
            if current is None:
                return None
            updated = patch.apply(current)
            assignments = "content = %s, status = %s, confidence = %s, metadata = %s, updated_at = %s" + (", embedding = %s" if vector is not None else "")
            params: list[Any] = [updated.content, updated.status.value, updated.confidence, meta if meta is not None else _json(dict(updated.metadata), "metadata"), updated.updated_at]
            if vector is not None:
                params.append(vector)
            await conn.execute(f"UPDATE memories SET {assignments} WHERE scope = %s AND id = %s", (*params, str(scope), memory_id))  # type: ignore[arg-type]
            return updated

        updated = await self._run(run)
        if updated is None:
            raise BackendNotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        return updated

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        require_scope(scope)
        if not isinstance(memory_id, str) or "\x00" in memory_id:
            return False

        async def run(conn: Conn) -> int:
            await declare(conn, [str(scope)])
            return (await conn.execute("DELETE FROM memories WHERE scope = %s AND id = %s", (str(scope), memory_id))).rowcount

        return await self._run(run) == 1

    # -- reads ------------------------------------------------------------------------------
    # A recall is one or a few `PgPool.read`s: the ScopeSet's declaration (row-level security,
    # with the planner settings of the search) and the queries after it run in one implicit
    # transaction and one round trip. Ranking reads (scope, id, similarity) only; the full rows
    # of the final top `limit` alone are read and decoded.
    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest(f"search expects a SearchQuery, got {type(query).__name__}", backend=self.name)
        require_scope_set(query.scopes)
        if query.filters:
            raise UnsupportedFilter(f"the postgres backend supports no extra filters (got: {', '.join(sorted(map(str, query.filters)))})", backend=self.name)
        (vector,) = await self._embed([_text(query.text, "query text")])
        limit = checked_limit(query.limit)
        scopes, now = query.scopes, query.at()
        words = lexical_words(query.text) if self.lexical_channel else []
        if not words:  # no lexical channel: the vector channel's own top `limit`
            return SearchResult(hits=tuple(await self.search_vector(scopes, vector, limit=limit, statuses=query.statuses, kinds=query.kinds, now=now)))
        # adapters/postgres/lexical.py: full-text search over the same ScopeSet, fused. One read
        # ranks both channels (the lexical statement counts the query words' postings and keeps
        # the rare ones within its budget itself); a second reads the fused winners' rows.
        params, planner, declared = self._params(scopes, vector, statuses=query.statuses, kinds=query.kinds, now=now, limit=max(limit, FUSION_DEPTH))
        params["terms"] = joined(tagged_terms(words, [str(entry.key) for entry in scopes]))
        lexical = lexical_statement("m.scope, m.id", with_kinds=params["kinds"] is not None)
        _, by_vector, by_words = await self._read([declaration(*declared, planner), (self._vector_statement(params, rows=False), params), (lexical, params)])
        fused = fuse_ranked(candidates(by_vector), candidates(by_words), limit)
        if not fused:
            return SearchResult(hits=())
        params["top"] = [mid for _, mid, _ in fused]
        rows = (await self._read([declaration(*declared), (self._rows_statement(params), params)]))[1]
        return SearchResult(hits=tuple(self._hits(scopes, fused, rows)))

    async def search_lexical(self, query: SearchQuery, vector: np.ndarray) -> list[Hit]:
        """Full-text top-`FUSION_DEPTH` over exactly the ScopeSet (declared for row-level security
        and in the WHERE, with the vector branch's filters), best first, each scored with its
        similarity to `vector`. Only the ScopeSet's own scope-tagged words are looked up, the rarest
        within the candidate budget (adapters/postgres/lexical.py). Empty when the text has no
        words, or only words too common to tell rows apart. (`search` runs the same statements,
        reading the rows of the fused winners only.)"""
        words = lexical_words(query.text)
        if not words:
            return []
        scopes = query.scopes
        params, _, declared = self._params(scopes, vector, statuses=query.statuses, kinds=query.kinds, now=query.at(),
                                           limit=max(checked_limit(query.limit), FUSION_DEPTH))
        params["terms"] = joined(tagged_terms(words, [str(entry.key) for entry in scopes]))
        text = lexical_statement(M_COLUMNS, with_kinds=params["kinds"] is not None)
        rows = (await self._read([declaration(*declared), (text, params)]))[1]
        return self._hits(scopes, [(row[2], row[1], similarity(row[-2])) for row in rows], [row[:-2] for row in rows])

    async def search_vector(self, scopes: ScopeSet, vector: np.ndarray, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}),
                            kinds: frozenset[str] | None = None, now: float | None = None) -> list[Hit]:
        """Exact top-`limit` over exactly `scopes`: filter first (WHERE + RLS), then order by distance.
        Expired rows (`expires_at <= now`, the bridge's clock) are excluded in every branch's WHERE."""
        require_scope_set(scopes)
        params, planner, declared = self._params(scopes, vector, statuses=statuses, kinds=kinds, now=now, limit=limit)
        rows = (await self._read([declaration(*declared, planner), (self._vector_statement(params, rows=True), params)]))[1]
        return self._hits(scopes, [(row[2], row[1], similarity(row[-1])) for row in rows], [row[:-1] for row in rows])

    #: the vector channel's statement (a method, so a test can break it and see row-level security hold)
    _vector_statement = staticmethod(vector_statement)

    def _params(self, scopes: ScopeSet, vector: np.ndarray, **kwargs: Any) -> tuple[dict[str, Any], dict[str, str], tuple[list[str], list[str], list[str]]]:
        """`search_params` with this store's ANN scopes (adapters/postgres/recall.py)."""
        return search_params(scopes, vector, ann_scopes=self._ann_scopes, ann_ef_search=self.ann_ef_search, **kwargs)

    @staticmethod
    def _rows_statement(params: dict[str, Any]) -> str:
        """The full rows of the fused winners (`%(top)s`), under the search's WHERE again."""
        return rows_statement(M_COLUMNS, with_kinds=params["kinds"] is not None)

    def _hits(self, scopes: ScopeSet, ranked: Sequence[tuple[str, str, float]], rows: Sequence[Sequence[Any]]) -> list[Hit]:
        """The ranked (scope, id, score) candidates as Hits, in their order, from their rows (any
        order): a candidate whose row is missing, does not decode, or is not what was ranked
        is dropped. The row's own scope is the only truth: it must be one the ScopeSet permits."""
        keys = {str(entry.key): entry.key for entry in scopes}  # a row of the set's own scope needs no parse
        by_id = {row[1]: row for row in rows}
        hits: list[Hit] = []
        for scope, mid, score in ranked:
            row = by_id.get(mid)
            memory = None if row is None or row[2] != scope else self._decode(row, keys=keys)
            if memory is None or not scopes.permits(memory.scope, memory.id):
                continue
            hits.append(Hit(memory, memory.scope, score))
        return hits

    async def _read(self, statements: Sequence[tuple[str, Any]]) -> list[list[Any]]:
        return await self._ready().read(statements, "memory store")

    async def _read_scope(self, scope: ScopeKey, text: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one statement over one scope, declared for row-level security first: one
        read, one round trip (a transaction would add BEGIN and COMMIT around the two)."""
        return (await self._read([declaration([str(scope)]), (text, params)]))[1]

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> list[StoredMemory]:
        require_scope(scope)
        allowed = checked_statuses(statuses, allow_none=True)
        checked_limit(limit)

        where = " AND status = ANY(%s)" if allowed is not None else ""
        params = (str(scope), *((allowed,) if allowed is not None else ()), limit)
        rows = await self._read_scope(scope, f"SELECT {COLUMNS} FROM memories WHERE scope = %s{where} ORDER BY created_at DESC, seq DESC LIMIT %s", params)
        return [m for m in (self._decode(r, scope) for r in rows) if m is not None]

    async def list_page(self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None) -> ListPage:
        require_scope(scope)
        allowed = checked_statuses(statuses, allow_none=True)
        checked_limit(limit, _MAX_PAGE)
        self._ready()
        codec = self._codec
        if codec is None:
            raise BackendUnavailable("the PostgreSQL backend is not open", backend=self.name)
        after = -1 if cursor is None else codec.open(scope, cursor).get("after")
        if isinstance(after, bool) or not isinstance(after, int):
            raise InvalidRequest("the cursor is not one this backend issued for this scope", backend=self.name, scope=scope)

        where = " AND status = ANY(%s)" if allowed is not None else ""
        params = (str(scope), after, *((allowed,) if allowed is not None else ()), limit + 1)
        rows = await self._read_scope(scope, f"SELECT {COLUMNS} FROM memories WHERE scope = %s AND seq > %s{where} ORDER BY seq LIMIT %s", params)
        more, rows = len(rows) > limit, rows[:limit]
        memories = tuple(m for m in (self._decode(r, scope) for r in rows) if m is not None)
        return ListPage(memories=memories, next_cursor=codec.mint(scope, {"after": int(rows[-1][0])}) if more else None)

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        require_scope(scope)
        key = _text(idempotency_key, "idempotency_key")

        rows = await self._read_scope(scope, f"SELECT {COLUMNS} FROM memories WHERE scope = %s AND idempotency_key = %s", (str(scope), key))
        return self._decode(rows[0], scope) if rows else None

    async def list_scopes(self, tenant_id: str) -> list[ScopeKey]:
        """From the per-scope counts (never a memory row); another tenant's scopes never."""
        if not isinstance(tenant_id, str) or not tenant_id:
            raise InvalidRequest("tenant_id must be a non-empty string", backend=self.name)

        tenant = _text(tenant_id, "tenant_id")
        _, rows = await self._read([
            ("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant)),  # the table's policy shows this tenant only
            ("SELECT scope FROM memory_scopes WHERE tenant_id = %s AND rows > 0 ORDER BY scope", (tenant,)),
        ])
        keys: list[ScopeKey] = []
        for (text,) in rows:
            try:
                key = ScopeKey.parse(text)
            except (ValueError, TypeError):
                self.alarms.raise_alarm(text, "scope does not parse")
                continue
            if key.tenant_id == tenant_id:
                keys.append(key)
        return keys

    async def count(self) -> int:
        """Every row (an operator view over `memory_scopes`, no memory read)."""
        ((count,),) = (await self._read([("SELECT COALESCE(memory_row_count(), 0)", None)]))[0]
        return int(count)

    async def create_ann_index(self, scope: ScopeKey, *, m: int = 16, ef_construction: int = 64) -> str:
        """Opt-in approximate search for one very large scope: a partial HNSW index on its rows
        (built as the owner, `migrate_url`), recorded in `backend_meta` so every replica that opens
        afterwards searches that scope through it (this one at once). Recall then depends on
        `ann_ef_search`; `benchmarks/filtered_recall.py` measures it. Other scopes stay exact."""
        require_scope(scope)
        if self.migrate_url is None:
            raise BackendMisconfigured("creating an index needs the owner's migrate_url", backend=self.name)
        name = "memories_ann_" + hashlib.sha256(str(scope).encode()).hexdigest()[:16]

        async def build(conn: Conn) -> None:
            where = await (await conn.execute(_EXTENSION_SCHEMA)).fetchone()
            await conn.execute(sql.SQL("SET LOCAL search_path TO {}, {}, pg_catalog").format(sql.Identifier(self.schema), sql.Identifier(where[0] if where else "public")))
            await conn.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON memories USING hnsw (embedding vector_ip_ops) WITH (m = {}, ef_construction = {}) WHERE scope = {}").format(
                sql.Identifier(name), sql.Literal(int(m)), sql.Literal(int(ef_construction)), sql.Literal(str(scope))))
            await conn.execute("INSERT INTO backend_meta (name, value) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET value = excluded.value", (f"ann:{scope}", name))

        owner = PgPool(self.migrate_url, schema=self.schema, min_size=1, max_size=1)
        try:
            await owner.run(build, "ANN index")
        finally:
            owner.close()
        self._ann_scopes = self._ann_scopes | {str(scope)}
        return name

    async def aclose(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __repr__(self) -> str:
        return f"PostgresBackend({self._pool.where if self._pool else 'closed'!r}, schema={self.schema!r})"
