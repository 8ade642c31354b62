"""The embedded local backend: SQLite for durability, numpy partitions for recall.

Never decides who may see what: it stores into the ScopeKey it is given and scans exactly the
partitions of the ScopeSet it is given.

Durability. Every acknowledged write is committed in WAL mode with `synchronous=FULL` (fsync on
commit) before `put` returns; the numpy partitions are a cache rebuilt from SQLite, so a crash
can lose nothing that was acknowledged. A write that fails leaves neither a row nor a vector.

Concurrency. Two processes may open one data directory: SQLite's WAL gives one writer at a time
(others wait up to `busy_timeout`) and readers never block. Each process watches
`PRAGMA data_version` and drops its partition cache when another process has committed, so it
never serves a memory another process deleted. Within a process, calls are serialised by a lock;
SQLite work is short and runs inline on the event loop (a put's fsync blocks for ~1 ms).

Idempotency. `(scope, idempotency_key)` is UNIQUE: a retried put returns the first record; the
same key with different content is a `Conflict`, never a second memory.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from adapters.base import (
    Capabilities,
    Hit,
    MemoryPatch,
    NewMemory,
    Provenance,
    SearchQuery,
    SearchResult,
    Status,
    StoredMemory,
    require_scope,
    require_scope_set,
)
from adapters.embedding import Embedder, HashingEmbedder
from adapters.errors import Conflict, EmbedderMismatch, InvalidRequest, NotFound, Unavailable, UnsupportedFilter
from adapters.local.partitions import Partition
from adapters.scopes import ScopeKey, ScopeSet
from identity.ids import validate_id
from identity.storage import connect_durable

__all__ = ["LocalBackend"]

SCHEMA_VERSION = "1"
DB_FILENAME = "memories.sqlite3"
_STATUS_CODES = {s: i for i, s in enumerate(Status)}
_STATUS_BY_VALUE = {s.value: s for s in Status}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    scope TEXT NOT NULL,
    tenant_id TEXT,
    content TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    confidence REAL NOT NULL,
    provenance TEXT NOT NULL,
    subject_user_id TEXT,
    metadata TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    idempotency_key TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (scope, id),
    UNIQUE (scope, idempotency_key)
);
CREATE INDEX IF NOT EXISTS memories_by_tenant ON memories (tenant_id, scope);
"""
_COLUMNS = "rowid, id, scope, content, kind, status, confidence, provenance, subject_user_id, metadata, created_at, updated_at"


def _content_hash(memory: NewMemory) -> str:
    blob = json.dumps([memory.content, memory.kind, memory.status.value, dict(memory.metadata)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _provenance_json(p: Provenance) -> str:
    return json.dumps(p.to_dict(), ensure_ascii=False)


@functools.lru_cache(maxsize=4096)
def _provenance_from_json(text: str) -> Provenance:
    """Cached: Provenance is immutable, and recalls decode the same few authors over and over."""
    return Provenance.from_dict(json.loads(text))


@functools.lru_cache(maxsize=4096)
def _metadata_template(text: str) -> dict:
    return json.loads(text)


def _metadata_from_json(text: str) -> dict:
    """A fresh dict every time (values are scalars, so a shallow copy of the cached parse is safe)."""
    return {} if text == "{}" else dict(_metadata_template(text))


def _row_to_memory(row: sqlite3.Row | tuple, scope_key: ScopeKey | None = None) -> StoredMemory:
    """`scope_key`, when given, must already be verified equal to the row's stored scope."""
    _, mid, scope, content, kind, status, confidence, prov, subject, meta, created, updated = row
    return StoredMemory(
        id=mid,
        scope=scope_key if scope_key is not None else ScopeKey.parse(scope),
        content=content,
        kind=kind,
        status=_STATUS_BY_VALUE[status],
        confidence=confidence,
        provenance=_provenance_from_json(prov),
        subject_user_id=subject,
        metadata=_metadata_from_json(meta),
        created_at=created,
        updated_at=updated,
    )


class LocalBackend:
    """SQLite + numpy backend in one data directory. See the module docstring for guarantees."""

    name = "local"
    capabilities = Capabilities(
        memory_id_restriction=True,
        list_scopes=True,
        supported_filters=frozenset(),
    )

    def __init__(self, path: str | Path, embedder: Embedder | None = None, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.embedder: Embedder = embedder or HashingEmbedder()
        self._lock = threading.RLock()
        self._db = connect_durable(self.path / DB_FILENAME, busy_timeout_s=busy_timeout_s)
        with self._transaction():
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                self._db.execute(statement)
            self._check_meta()
        self._partitions: dict[ScopeKey, Partition] = {}
        self._kind_codes: dict[str, int] = {}
        self._data_version = self._current_data_version()
        self._closed = False

    # -- set-up -------------------------------------------------------------------------
    def _check_meta(self) -> None:
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        wanted = {"schema_version": SCHEMA_VERSION, "embedder": self.embedder.signature, "dimension": str(self.embedder.dimension)}
        if not rows:
            self._db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", wanted.items())
            return
        if rows.get("schema_version") != SCHEMA_VERSION:
            raise InvalidRequest(f"store at {self.path} has schema {rows.get('schema_version')!r}, this build reads {SCHEMA_VERSION!r}", backend=self.name)
        if rows.get("embedder") != self.embedder.signature:
            raise EmbedderMismatch(
                f"store at {self.path} was built with embedder {rows.get('embedder')!r}, not {self.embedder.signature!r}; "
                "open it with the same embedder or re-embed into a new store",
                backend=self.name,
            )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE takes the write lock up front, so two processes never interleave."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _current_data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _refresh_if_changed_elsewhere(self) -> None:
        version = self._current_data_version()
        if version != self._data_version:
            self._partitions.clear()  # another process committed: rebuild lazily from SQLite
            self._data_version = version

    def _kind_code(self, kind: str) -> int:
        code = self._kind_codes.get(kind)
        if code is None:
            code = self._kind_codes[kind] = len(self._kind_codes) + 1
        return code

    def _partition(self, scope: ScopeKey) -> Partition:
        part = self._partitions.get(scope)
        if part is not None:
            return part
        rows = self._db.execute("SELECT rowid, status, kind, vector FROM memories WHERE scope = ?", (str(scope),)).fetchall()
        dim = self.embedder.dimension
        if rows:
            rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            status = np.fromiter((_STATUS_CODES[Status(r[1])] for r in rows), dtype=np.int8, count=len(rows))
            kind = np.fromiter((self._kind_code(r[2]) for r in rows), dtype=np.int32, count=len(rows))
            matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            part = Partition.from_rows(dim, rowids, status, kind, matrix)
        else:
            part = Partition(dim)
        self._partitions[scope] = part
        return part

    def _ensure_open(self) -> None:
        if self._closed:
            raise Unavailable("the local store is closed", backend=self.name)

    # -- writes -------------------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        (stored,) = await self.put_many([(scope, memory, idempotency_key)])
        return stored

    async def put_many(self, items: Sequence[tuple[ScopeKey, NewMemory, str]]) -> list[StoredMemory]:
        """Store many memories in ONE transaction (one fsync): all land, or none do."""
        self._ensure_open()
        for scope, memory, key in items:
            require_scope(scope)
            validate_id(key, "idempotency_key")
            if not isinstance(memory, NewMemory):
                raise InvalidRequest(f"put expects NewMemory, got {type(memory).__name__}", backend=self.name)
        vectors = await self.embedder.embed([m.content for _, m, _ in items])
        now = time.time()
        results: list[StoredMemory] = []
        fresh: list[tuple[ScopeKey, int, Status, str, np.ndarray]] = []
        with self._lock:
            self._refresh_if_changed_elsewhere()
            with self._transaction():
                for (scope, memory, key), vector in zip(items, vectors):
                    existing = self._db.execute(
                        f"SELECT {_COLUMNS}, content_hash FROM memories WHERE scope = ? AND idempotency_key = ?", (str(scope), key)
                    ).fetchone()
                    digest = _content_hash(memory)
                    if existing is not None:
                        if existing[-1] != digest:
                            raise Conflict(f"idempotency key {key!r} was already used for different content", backend=self.name, scope=scope)
                        results.append(_row_to_memory(existing[:-1]))
                        continue
                    stored = StoredMemory.from_new(uuid.uuid4().hex, scope, memory, now)
                    cursor = self._db.execute(
                        "INSERT INTO memories (id, scope, tenant_id, content, kind, status, confidence, provenance, subject_user_id,"
                        " metadata, created_at, updated_at, idempotency_key, content_hash, vector)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            stored.id, str(scope), scope.tenant_id, stored.content, stored.kind, stored.status.value,
                            stored.confidence, _provenance_json(stored.provenance), stored.subject_user_id,
                            json.dumps(dict(stored.metadata), ensure_ascii=False), stored.created_at, stored.updated_at,
                            key, digest, np.ascontiguousarray(vector, dtype=np.float32).tobytes(),
                        ),
                    )
                    fresh.append((scope, int(cursor.lastrowid), stored.status, stored.kind, vector))
                    results.append(stored)
            # committed: only now do the vectors become searchable
            for scope, rowid, status, kind, vector in fresh:
                if scope in self._partitions:
                    self._partitions[scope].append(
                        np.array([rowid]), np.array([_STATUS_CODES[status]]), np.array([self._kind_code(kind)]), vector[None, :]
                    )
        return results

    def _fetch(self, scope: ScopeKey, memory_id: str) -> tuple:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND id = ?", (str(scope), memory_id)).fetchone()
        if row is None:
            raise NotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        return row

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        self._ensure_open()
        require_scope(scope)
        with self._lock:
            return _row_to_memory(self._fetch(scope, memory_id))

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        self._ensure_open()
        require_scope(scope)
        vector = None
        if patch.content is not None:
            vector = (await self.embedder.embed([patch.content]))[0]
        with self._lock:
            self._refresh_if_changed_elsewhere()
            with self._transaction():
                row = self._fetch(scope, memory_id)
                updated = patch.apply(_row_to_memory(row))
                self._db.execute(
                    "UPDATE memories SET content = ?, status = ?, confidence = ?, metadata = ?, updated_at = ?"
                    + (", vector = ?" if vector is not None else "")
                    + " WHERE rowid = ?",
                    (
                        updated.content, updated.status.value, updated.confidence,
                        json.dumps(dict(updated.metadata), ensure_ascii=False), updated.updated_at,
                        *((np.ascontiguousarray(vector, dtype=np.float32).tobytes(),) if vector is not None else ()),
                        row[0],
                    ),
                )
            part = self._partitions.get(scope)
            if part is not None:
                if vector is not None:  # content changed: simplest correct move is to rebuild
                    del self._partitions[scope]
                else:
                    part.set_status(row[0], _STATUS_CODES[updated.status])
        return updated

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        self._ensure_open()
        require_scope(scope)
        with self._lock:
            self._refresh_if_changed_elsewhere()
            with self._transaction():
                row = self._db.execute("SELECT rowid FROM memories WHERE scope = ? AND id = ?", (str(scope), memory_id)).fetchone()
                if row is None:
                    return False
                self._db.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
            part = self._partitions.get(scope)
            if part is not None:
                part.remove(row[0])
        return True

    # -- reads --------------------------------------------------------------------------
    def _rowids_for(self, scope: ScopeKey, memory_ids: Iterable[str]) -> np.ndarray:
        ids = list(memory_ids)
        found: list[int] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found += [r[0] for r in self._db.execute(f"SELECT rowid FROM memories WHERE scope = ? AND id IN ({marks})", (str(scope), *chunk))]
        return np.asarray(found, dtype=np.int64)

    def search_vector(self, scopes: ScopeSet, vector: np.ndarray, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}), kinds: frozenset[str] | None = None) -> list[tuple[ScopeKey, int, float]]:
        """Exact top-`limit` over exactly the partitions of `scopes`: (scope, rowid, score).

        Filters (status, kind, an entry's memory ids) are applied to each partition's scores
        before the top-k: excluded rows score -inf and are never returned, so `limit` permitted
        rows come back whenever that many exist. Partitions score straight into one buffer (no
        concatenation); the status filter is a cached 0/-inf bias per partition; the
        (scope, rowid) mapping happens under the lock, before any concurrent swap-remove.
        """
        require_scope_set(scopes)  # also a forged, empty one
        if not isinstance(limit, int) or limit < 1:
            raise InvalidRequest(f"limit must be a positive integer, got {limit!r}", backend=self.name)
        allowed = tuple(sorted(_STATUS_CODES[s] for s in statuses))
        query = np.ascontiguousarray(vector, dtype=np.float32)
        with self._lock:
            self._refresh_if_changed_elsewhere()
            parts = [(entry, self._partition(entry.key)) for entry in scopes]
            kind_lut = None
            if kinds is not None:  # after loading: a partition load may assign new kind codes
                kind_lut = np.zeros(len(self._kind_codes) + 1, dtype=bool)
                for k in kinds:
                    code = self._kind_codes.get(k)
                    if code is not None:
                        kind_lut[code] = True
            total = sum(part.size for _, part in parts)
            if total == 0:
                return []
            # one score buffer for the whole ScopeSet; each partition scores straight into its slice
            scores = np.empty(total, dtype=np.float32)
            segments: list[tuple[ScopeKey, np.ndarray]] = []
            ends: list[int] = []
            offset = 0
            for entry, part in parts:
                n = part.size
                if n == 0:
                    continue
                seg = scores[offset : offset + n]
                part.scores_into(query, seg)
                bias = part.status_bias(allowed)
                if bias is not None:
                    seg += bias
                mask = None
                if kind_lut is not None:
                    mask = kind_lut[part.kind[:n]]
                if entry.memory_ids is not None:
                    imask = np.isin(part.rowids[:n], self._rowids_for(entry.key, entry.memory_ids))
                    mask = imask if mask is None else mask & imask
                if mask is not None:
                    seg[~mask] = -np.inf
                segments.append((entry.key, part.rowids[:n]))
                offset += n
                ends.append(offset)
            k = min(limit, total)
            top = np.argpartition(scores, total - k)[total - k :] if k < total else np.arange(total)
            values = scores[top]
            order = np.argsort(-values, kind="stable")
            top, values = top[order], values[order]
            keep = values > -np.inf  # a filtered-out row is never returned
            if not keep.all():
                top, values = top[keep], values[keep]
            all_rowids = np.concatenate([r for _, r in segments]) if len(segments) > 1 else segments[0][1]
            which = np.searchsorted(np.asarray(ends), top, side="right").tolist()
            return [(segments[w][0], rowid, score) for w, rowid, score in zip(which, all_rowids[top].tolist(), values.tolist())]

    def load_hits(self, ranked: list[tuple[ScopeKey, int, float]]) -> list[Hit]:
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        with self._lock:
            rows = {r[0]: r for r in self._db.execute(f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({marks})", [r for _, r, _ in ranked])}
        hits = []
        key_text = {key: str(key) for key in {r[0] for r in ranked}}
        for key, rowid, score in ranked:
            row = rows.get(rowid)
            if row is None:  # deleted between scan and load: never resurrect it
                continue
            if row[2] != key_text[key]:  # the row's stored scope is the only truth; mismatch -> drop
                continue
            # str(ScopeKey) is injective, so the verified key IS the row's scope: no re-parse
            hits.append(Hit(_row_to_memory(row, key), key, 0.0 if score < 0.0 else 1.0 if score > 1.0 else score))
        return hits

    async def search(self, query: SearchQuery) -> SearchResult:
        self._ensure_open()
        if query.filters:
            unknown = ", ".join(sorted(query.filters))
            raise UnsupportedFilter(f"the local backend supports no extra filters (got: {unknown})", backend=self.name)
        (vector,) = await self.embedder.embed([query.text])
        ranked = self.search_vector(query.scopes, vector, limit=query.limit, statuses=query.statuses, kinds=query.kinds)
        return SearchResult(hits=tuple(self.load_hits(ranked)))

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> list[StoredMemory]:
        self._ensure_open()
        require_scope(scope)
        sql = f"SELECT {_COLUMNS} FROM memories WHERE scope = ?"
        params: list[object] = [str(scope)]
        if statuses is not None:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            params += [s.value for s in statuses]
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            return [_row_to_memory(r) for r in self._db.execute(sql, params)]

    async def list_scopes(self, tenant_id: str) -> list[ScopeKey]:
        self._ensure_open()
        validate_id(tenant_id, "tenant_id")
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT scope FROM memories WHERE tenant_id = ? ORDER BY scope", (tenant_id,)).fetchall()
        return [ScopeKey.parse(r[0]) for r in rows]

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Erasure: the rows are already deleted through `delete`; what is left are decode caches
        that may still hold the subject's provenance or metadata in this process — drop them."""
        _provenance_from_json.cache_clear()
        _metadata_template.cache_clear()
        return 0

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def resident_vector_bytes(self) -> int:
        return sum(p.nbytes for p in self._partitions.values())

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with self._lock:
                self._partitions.clear()
                self._db.close()

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.path)!r}, embedder={self.embedder.signature})"
