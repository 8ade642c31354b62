"""The embedded local backend: SQLite for durability, numpy partitions for recall.

Never decides who may see what: it stores into the ScopeKey it is given and scans exactly the
partitions of the ScopeSet it is given.

Durability. Every acknowledged write is committed in WAL mode with `synchronous=FULL` (fsync on
commit) before `put` returns; the numpy partitions are a cache rebuilt from SQLite, so a crash
can lose nothing that was acknowledged. A write that fails leaves neither a row nor a vector.

Store identity (`store_marker`). A random `store_id` is made with the store; `writes` counts
committed puts, updates and deletes and is bumped in the SAME transaction as the write, so it is
never behind the data after a crash. The bridge records both; opening with
`expected_store_id=` (or `expect_existing=True`) refuses, as `CorruptStore` naming the files, a
missing directory, a missing or 0-byte database file, a database file without a store in it, a
WAL left without its database, or a store with another id.

What SQLite cannot detect. The WAL holds commits not yet checkpointed into the database file.
If `memories.sqlite3-wal` is deleted, truncated or damaged after a crash (while no connection
has it open), SQLite opens the database file without those commits and says nothing: the rows
they held are silently gone, and `writes` goes back with them (the counter lives in the same
file). The store cannot tell this from a clean state (a test shows it opening without a word).
Only a record kept elsewhere can: the bridge compares `writes` with the high-water mark it
recorded after its last write, so a lower count reveals the loss; commits made after the last
record it kept are lost without a trace. Likewise an older copy of the whole directory restored
from a backup passes every check here except that comparison. Damage inside a page that no
query reads stays undetected until it is read (`PRAGMA integrity_check` finds it; it is not
run at open because it reads the whole file).

Concurrency. Two processes may open one data directory: SQLite's WAL gives one writer at a time
(others wait up to `busy_timeout_s`, then `StorageBusy`) and readers never block. Every
committing transaction stamps the ScopeKeys it touched in `partition_version` with a store-wide
change number. Each process watches `PRAGMA data_version` and, when another process has
committed, reads only the versions newer than the last it saw and drops only those partitions
(finding 17), so it never serves a memory another process deleted and never reloads a scope
nobody touched. Within a process, calls are serialised by a lock; SQLite work is short and runs
inline on the event loop (a put's fsync blocks for ~1 ms).

Damaged rows (finding 16). A row whose vector blob has the wrong length or holds NaN/inf, whose
status is unknown or whose JSON does not decode is quarantined: recorded in the `quarantine`
table (persisted, seen by every process), removed from the searchable set, alarmed (logged at
ERROR and counted by `alarms`, as in the remote adapters), reported to the `on_quarantine` hook,
and listed by `quarantined()` for the bridge's audit. The rest of the scope keeps being served;
a quarantined row stays out of search until it is deleted. A quarantined row whose fields still
decode is still returned by `get`, `list` and `list_page` (so erasure finds it); one that does
not decode is skipped there (`get` raises `DamagedRecord`), and `erase_subject_traces` deletes
the subject's quarantined rows.

Idempotency. `(scope, idempotency_key)` is UNIQUE: a retried put returns the first record with
`created=False`; the same key with different content is a `Conflict`, never a second memory.

Embedder identity (issue 15). The store records its embedder's signature; all its vectors are in
that one space. Opened without an embedder it rebuilds the recorded one (`embedder_for_signature`;
a new store gets `default_embedder()`), opened with another it refuses (`EmbedderMismatch`), and
`reembed` moves the whole store to a new space in one transaction. A process that still holds
the old space finds out at its next search or write (the re-embed stamps every partition, and
absorbing foreign changes compares the recorded signature) and refuses, rather than reading
vectors of another shape as damage.

Errors. Every public method maps SQLite errors into the tree (`adapters/local/errors.py`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import inspect
import logging
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from adapters.base import (
    Capabilities,
    Hit,
    ListPage,
    MemoryPatch,
    NewMemory,
    SearchQuery,
    SearchResult,
    Status,
    StoredMemory,
    StoreMarker,
    require_scope,
    require_scope_set,
)
from adapters.shared.embedding import Embedder, default_embedder, describe_embedder, embedder_for_signature
from adapters.shared.envelope import RecordAlarms
from adapters.errors import BackendError, Conflict, EmbedderMismatch, InvalidRequest, NotFound, Unavailable, UnsupportedFilter
from adapters.local.checks import check_new, check_patch, valid_key, valid_limit, valid_statuses
from adapters.local.cursor import decode_cursor, encode_cursor
from adapters.local.errors import CorruptStore, DamagedRecord, EmbeddingFailed, storage_error, storage_errors
from adapters.local.partitions import Partition
from adapters.local.records import (
    COLUMNS as _COLUMNS,
    STATUS_CODES as _STATUS_CODES,
    RowDamage,
    _provenance_from_json,
    clear_decode_caches,
    content_hash,
    encodable,
    encodable_text,
    lenient_text,
    metadata_json,
    provenance_json,
    row_to_memory,
)
from adapters.local.schema import DB_FILENAME, SCHEMA_VERSION, create_or_upgrade, db_path, preflight, private_dir, recorded_embedder, tighten_files
from adapters.scopes import ScopeKey, ScopeSet
from identity.errors import VikingBridgeError
from identity.storage.sqlite import connect_durable

__all__ = ["LocalBackend", "QuarantinedRow", "DB_FILENAME", "SCHEMA_VERSION"]

log = logging.getLogger(__name__)

_STATUS_CODE_BY_VALUE = {s.value: code for s, code in _STATUS_CODES.items()}
_MAX_PAGE = 10_000
_FIRST_ROWID = -(2**63)


@dataclasses.dataclass(frozen=True, slots=True)
class QuarantinedRow:
    """A row taken out of the searchable set. Carries ids and a reason, never content."""

    scope: str  # the stored scope text (it may itself be what does not parse)
    memory_id: str
    reason: str
    detected_at: float


class _StaleStaging(Unavailable):
    """Rows changed between embedding and committing a re-embed: another pass is needed (never
    leaves `reembed`; a member of the tree like every raise here)."""


@dataclasses.dataclass
class _Touch:
    """What one write transaction changed: the scopes to stamp and the writes to count."""

    scopes: set[str] = dataclasses.field(default_factory=set)
    writes: int = 0


def _guarded(method: Callable) -> Callable:
    """Every public method: closed-store check, SQLite errors mapped, a damaged row quarantined.
    (A plain try/except rather than `storage_errors`: this wraps the recall hot path.)"""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run(self: "LocalBackend", *args: Any, **kwargs: Any) -> Any:
            if self._closed:
                self._ensure_open()
            try:
                return await method(self, *args, **kwargs)
            except (sqlite3.Error, OSError) as exc:
                raise storage_error(exc, self._db_file) from exc
            except RowDamage as damage:
                raise self._damaged(damage) from None

        return run

    @functools.wraps(method)
    def run_sync(self: "LocalBackend", *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            self._ensure_open()
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(exc, self._db_file) from exc
        except RowDamage as damage:
            raise self._damaged(damage) from None

    return run_sync


def _vector_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


@functools.lru_cache(maxsize=64)
def _allowed_codes(statuses: frozenset[Status]) -> tuple[int, ...]:
    return tuple(sorted(_STATUS_CODES[s] for s in statuses))


class LocalBackend:
    """SQLite + numpy backend in one data directory. See the module docstring for guarantees.

    `expect_existing=True` refuses to create a store (the caller has a record of one);
    `expected_store_id=` additionally refuses a store with another id. `on_quarantine` is called
    with each `QuarantinedRow` this process detects (the bridge audits them).

    `embedder=None`: an existing store keeps the embedder it recorded (rebuilt from its
    signature, so a store made by an older default is never searched in another vector space);
    a new store gets `default_embedder()` (hybrid lexical + semantic where the semantic encoder
    installs). An explicit embedder that differs from the recorded one is refused
    (`EmbedderMismatch`): re-embed explicitly instead. Which one is in use is logged at open
    and named by `embedder_note`.
    """

    name = "local"
    capabilities = Capabilities(
        memory_id_restriction=True,
        list_scopes=True,
        supported_filters=frozenset(),
    )

    def __init__(
        self,
        path: str | Path,
        embedder: Embedder | None = None,
        *,
        busy_timeout_s: float = 10.0,
        expect_existing: bool = False,
        expected_store_id: str | None = None,
        on_quarantine: Callable[[QuarantinedRow], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self._db_file = db_path(self.path)
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.RLock()
        self._closed = True  # until the store is open and checked
        self._on_quarantine = on_quarantine
        self._partitions: dict[ScopeKey, Partition] = {}
        self._kind_codes: dict[str, int] = {}
        #: partition loads per ScopeKey since open (a reload after another process's write counts)
        self.partition_loads: collections.Counter[ScopeKey] = collections.Counter()
        #: rows this process quarantined since open: the same alarm surface as the remote adapters
        self.alarms = RecordAlarms(self.name)
        expect = expect_existing or expected_store_id is not None
        with storage_errors(self._db_file):
            preflight(self.path, expect_existing=expect)
            private_dir(self.path)
            self._db = connect_durable(self._db_file, busy_timeout_s=busy_timeout_s)
        try:
            with storage_errors(self._db_file):
                self.embedder: Embedder = embedder if embedder is not None else self._resolve_embedder()
                tighten_files(self.path)
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    meta = create_or_upgrade(
                        self._db, self.path, embedder_signature=self.embedder.signature, dimension=self.embedder.dimension,
                        expect_existing=expect, expected_store_id=expected_store_id,
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
                self._store_id = meta["store_id"]
                try:
                    self._cursor_key = bytes.fromhex(meta["cursor_key"])
                except ValueError:
                    raise CorruptStore("the store's cursor key is damaged", path=self._db_file) from None
                self._seen_changes = self._counter("changes")
                self._data_version = self._current_data_version()
        except BaseException:
            self._db.close()
            raise
        self._closed = False
        warm = getattr(self.embedder, "warm", None)
        if callable(warm):  # a model's weights load at open (once per process), not in a first request
            warm()
        self.embedder_note = describe_embedder(self.embedder)
        log.info("local store %s recalls with %s [%s]", self.path, self.embedder_note, self.embedder.signature)

    def _resolve_embedder(self) -> Embedder:
        """No embedder given: the store's recorded one, or the default for a new store."""
        recorded = recorded_embedder(self._db)
        if recorded is None:
            return default_embedder()
        rebuilt = embedder_for_signature(recorded)
        if rebuilt is None:
            raise EmbedderMismatch(
                f"store at {self.path} was built with embedder {recorded!r}, which this install cannot rebuild; "
                "pass that embedder explicitly (a served model: OpenAICompatibleEmbedder) or re-embed into a new store",
                backend=self.name,
            )
        return rebuilt

    # -- transactions and cross-process cache coherence ---------------------------------
    def _rollback(self) -> None:
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the original error is the one to report
                self._db.execute("ROLLBACK")

    def _counter(self, name: str) -> int:
        row = self._db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
        if row is None or not isinstance(row[0], int):
            raise CorruptStore(f"the store's {name!r} counter is missing or damaged", path=self._db_file)
        return row[0]

    @contextlib.contextmanager
    def _write(self) -> Iterator[_Touch]:
        """One write transaction. BEGIN IMMEDIATE takes the write lock up front (two processes
        never interleave); under it, foreign changes are absorbed first, so stamping the touched
        scopes can never hide another process's change to the same scope. The touched scopes
        get a new change number and `writes` grows in the same transaction as the data."""
        touch = _Touch()
        self._db.execute("BEGIN IMMEDIATE")
        change = None
        try:
            self._absorb_foreign_changes()
            yield touch
            if touch.scopes:
                change = self._counter("changes") + 1
                self._db.execute("UPDATE counters SET value = ? WHERE name = 'changes'", (change,))
                if touch.writes:
                    self._db.execute("UPDATE counters SET value = value + ? WHERE name = 'writes'", (touch.writes,))
                self._db.executemany(
                    "INSERT INTO partition_version (scope, version) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET version = excluded.version",
                    [(s, change) for s in sorted(touch.scopes)],
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        if change is not None:
            self._seen_changes = change  # every change below it was absorbed under the write lock

    def _current_data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _absorb_foreign_changes(self) -> None:
        """Drop exactly the partitions another connection changed since we last looked.
        data_version is read BEFORE the versions, so a commit between the two is seen now or
        makes the next check differ; it is never missed."""
        self._data_version = self._current_data_version()
        changed = self._db.execute("SELECT scope, version FROM partition_version WHERE version > ?", (self._seen_changes,)).fetchall()
        if not changed:
            return
        if recorded_embedder(self._db) != self.embedder.signature:  # another process re-embedded the store
            self._partitions.clear()
            raise EmbedderMismatch(
                f"store at {self.path} was re-embedded with {recorded_embedder(self._db)!r} while this process had it open "
                f"with {self.embedder.signature!r}; reopen it", backend=self.name,
            )
        if self._partitions:
            by_text = {str(k): k for k in self._partitions}
            for scope_text, _ in changed:
                key = by_text.get(scope_text)
                if key is not None:
                    del self._partitions[key]
        self._seen_changes = max(self._seen_changes, max(v for _, v in changed))

    def _refresh_if_changed_elsewhere(self) -> None:
        if self._current_data_version() != self._data_version:
            self._absorb_foreign_changes()

    # -- reading rows that may hold damaged text --------------------------------------------
    def _fetchall(self, sql: str, params: Sequence[object] = ()) -> tuple[list[tuple], bool]:
        """Rows of a query, and whether they were read leniently. TEXT that is not UTF-8 (a
        damaged page, a foreign writer) fails the whole fetch with sqlite3's default decoder;
        only then is the query re-run with surrogate escapes, so `row_to_memory(check_text=True)`
        can refuse exactly the damaged rows. The common path keeps sqlite3's C decoder."""
        try:
            return self._db.execute(sql, params).fetchall(), False
        except sqlite3.OperationalError as exc:
            if "decode" not in str(exc).lower():
                raise
        self._db.text_factory = lenient_text
        try:
            return self._db.execute(sql, params).fetchall(), True
        finally:
            self._db.text_factory = str

    def _fetchone(self, sql: str, params: Sequence[object] = ()) -> tuple[tuple | None, bool]:
        rows, lenient = self._fetchall(sql, params)
        return (rows[0] if rows else None), lenient

    # -- partitions ---------------------------------------------------------------------
    def _kind_code(self, kind: str) -> int:
        code = self._kind_codes.get(kind)
        if code is None:
            code = self._kind_codes[kind] = len(self._kind_codes) + 1
        return code

    def _partition(self, scope: ScopeKey) -> Partition:
        part = self._partitions.get(scope)
        if part is not None:
            return part
        self.partition_loads[scope] += 1
        rows, lenient = self._fetchall(
            "SELECT m.rowid, m.id, m.status, m.kind, CAST(m.vector AS BLOB), typeof(m.vector) = 'blob' FROM memories m WHERE m.scope = ?"
            " AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.row_ref = m.rowid AND q.memory_id = m.id)",
            (str(scope),),
        )
        dim = self.embedder.dimension
        want = 4 * dim
        good: list[tuple] = []
        damaged: list[tuple[int, str, str, str]] = []
        for r in rows:
            if lenient and not all(encodable_text(t) for t in (r[1], r[3])):
                damaged.append((r[0], str(scope), r[1], "a text column is not valid UTF-8"))
            elif r[2] not in _STATUS_CODE_BY_VALUE:
                damaged.append((r[0], str(scope), r[1], "unknown status"))
            elif not r[5] or not isinstance(r[4], bytes):
                damaged.append((r[0], str(scope), r[1], "vector is not stored as a blob"))
            elif len(r[4]) != want:
                damaged.append((r[0], str(scope), r[1], f"vector has {len(r[4])} bytes, expected {want}"))
            else:
                good.append(r)
        if good:
            matrix = np.frombuffer(b"".join(r[4] for r in good), dtype=np.float32).reshape(len(good), dim)
            broken = ~np.isfinite(matrix).all(axis=1)
            if broken.any():
                damaged += [(good[i][0], str(scope), good[i][1], "vector holds NaN or infinity") for i in np.flatnonzero(broken).tolist()]
                good = [r for r, bad in zip(good, broken.tolist()) if not bad]
                matrix = matrix[~broken]
        if good:
            rowids = np.fromiter((r[0] for r in good), dtype=np.int64, count=len(good))
            status = np.fromiter((_STATUS_CODE_BY_VALUE[r[2]] for r in good), dtype=np.int8, count=len(good))
            kind = np.fromiter((self._kind_code(r[3]) for r in good), dtype=np.int32, count=len(good))
            part = Partition.from_rows(dim, rowids, status, kind, matrix)
        else:
            part = Partition(dim)
        self._partitions[scope] = part
        if damaged:
            self._quarantine(damaged)
        return part

    # -- quarantine (finding 16) ---------------------------------------------------------
    def _quarantine(self, rows: Sequence[tuple[int, str, str, str]]) -> None:
        """Take rows (rowid, scope text, memory id, reason) out of the searchable set, here and
        in every process; alarm for each. Recording it is best effort: if the store is busy,
        the rows are still out of this process's partitions and the alarm still fires."""
        now = time.time()
        for rowid, scope_text, _, _ in rows:
            for key, part in self._partitions.items():
                if str(key) == scope_text:
                    part.remove(rowid)
        fresh = list(rows)
        if not self._db.in_transaction:
            try:
                with storage_errors(self._db_file), self._write() as touch:
                    fresh = []
                    for rowid, scope_text, mid, reason in rows:
                        cur = self._db.execute(
                            "INSERT OR IGNORE INTO quarantine (row_ref, scope, memory_id, reason, detected_at) VALUES (?, ?, ?, ?, ?)",
                            (rowid, scope_text, mid, reason, now),
                        )
                        if cur.rowcount:
                            fresh.append((rowid, scope_text, mid, reason))
                            touch.scopes.add(scope_text)
            except BackendError as exc:
                log.error("could not record %d quarantined row(s) in %s: %s", len(rows), self._db_file, exc)
        for _, scope_text, mid, reason in fresh:
            self.alarms.raise_alarm(scope_text, f"memory {mid} quarantined in {self._db_file}: {reason}")
            if self._on_quarantine is not None:
                try:
                    self._on_quarantine(QuarantinedRow(scope_text, mid, reason, now))
                except Exception:  # an alarm hook must not take recall down with it
                    log.exception("on_quarantine hook failed")

    def _damaged(self, damage: RowDamage) -> DamagedRecord:
        ref = getattr(damage, "row_ref", None)
        if ref is not None:
            with self._lock:
                self._quarantine([(*ref, damage.reason)])
        scope_text, memory_id = (ref[1], ref[2]) if ref is not None else (None, None)
        return DamagedRecord(f"memory {memory_id!r} of scope {scope_text} cannot be read: {damage.reason}; it is quarantined", path=self._db_file, memory_id=memory_id)

    def _decode(self, row: tuple, scope_key: ScopeKey | None = None, *, check_text: bool = False) -> StoredMemory:
        try:
            return row_to_memory(row, scope_key, check_text=check_text)
        except RowDamage as damage:
            damage.row_ref = (row[0], row[2], row[1])  # type: ignore[attr-defined]
            raise

    def _decode_all(self, rows: Iterable[tuple], *, check_text: bool = False) -> list[StoredMemory]:
        """Decode rows, quarantining (and skipping) the ones that do not decode."""
        out: list[StoredMemory] = []
        damaged: list[tuple[int, str, str, str]] = []
        for row in rows:
            try:
                out.append(row_to_memory(row, check_text=check_text))
            except RowDamage as damage:
                damaged.append((row[0], row[2], row[1], damage.reason))
        if damaged:
            self._quarantine(damaged)
        return out

    @_guarded
    async def quarantined(self) -> list[QuarantinedRow]:
        """Every quarantined row of the store (ids and reasons only; an operator/audit view)."""
        with self._lock:
            rows = self._db.execute("SELECT scope, memory_id, reason, detected_at FROM quarantine ORDER BY detected_at, row_ref").fetchall()
        return [QuarantinedRow(*r) for r in rows]

    def _ensure_open(self) -> None:
        if self._closed:
            raise Unavailable("the local store is closed", backend=self.name)

    async def _embed(self, texts: list[str]) -> np.ndarray:
        """The embedder's vectors, checked: the wrong shape or a NaN must never reach a partition."""
        return await self._embed_for(self.embedder, texts)

    # -- writes -------------------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        (stored,) = await self.put_many([(scope, memory, idempotency_key)])
        return stored

    @_guarded
    async def put_many(self, items: Sequence[tuple[ScopeKey, NewMemory, str]]) -> list[StoredMemory]:
        """Store many memories in ONE transaction (one fsync): all land, or none do. Each result
        says whether this call created it (`created`)."""
        items = list(items)
        if not items:
            return []
        prepared = []
        for item in items:
            if not isinstance(item, tuple) or len(item) != 3:
                raise InvalidRequest("put_many expects (scope, memory, idempotency_key) tuples", backend=self.name)
            scope, memory, key = item
            require_scope(scope)
            valid_key(key, "idempotency_key")
            memory = check_new(memory)
            prepared.append((scope, str(scope), memory, key, content_hash(memory), provenance_json(memory.provenance), metadata_json(memory.metadata)))
        vectors = await self._embed([m.content for _, _, m, *_ in prepared])
        now = time.time()
        results: list[StoredMemory] = []
        fresh: list[tuple[ScopeKey, int, Status, str, np.ndarray]] = []
        with self._lock:
            with self._write() as touch:
                for (scope, scope_text, memory, key, digest, prov, meta), vector in zip(prepared, vectors):
                    existing, lenient = self._fetchone(f"SELECT {_COLUMNS}, content_hash FROM memories WHERE scope = ? AND idempotency_key = ?", (scope_text, key))
                    if existing is not None:
                        if existing[-1] != digest:
                            raise Conflict(f"idempotency key {key!r} was already used for different content", backend=self.name, scope=scope)
                        results.append(dataclasses.replace(self._decode(existing[:-1], scope, check_text=lenient), created=False))
                        continue
                    created_at = memory.created_at if memory.created_at is not None else now
                    stored = StoredMemory(
                        uuid.uuid4().hex, scope, memory.content, memory.kind, memory.status, memory.confidence, memory.provenance,
                        memory.subject_user_id, memory.metadata, created_at, now, memory.expires_at, created=True,
                    )
                    cursor = self._db.execute(
                        "INSERT INTO memories (id, scope, tenant_id, content, kind, status, confidence, provenance, subject_user_id,"
                        " metadata, created_at, updated_at, idempotency_key, content_hash, vector, expires_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            stored.id, scope_text, scope.tenant_id, stored.content, stored.kind, stored.status.value,
                            stored.confidence, prov, stored.subject_user_id, meta, stored.created_at, stored.updated_at,
                            key, digest, _vector_blob(vector), stored.expires_at,
                        ),
                    )
                    touch.scopes.add(scope_text)
                    touch.writes += 1
                    fresh.append((scope, int(cursor.lastrowid), stored.status, stored.kind, vector))
                    results.append(stored)
            # committed: only now do the vectors become searchable
            for scope, rowid, status, kind, vector in fresh:
                if scope in self._partitions:
                    self._partitions[scope].append(
                        np.array([rowid]), np.array([_STATUS_CODES[status]]), np.array([self._kind_code(kind)]), vector[None, :]
                    )
        return results

    def _fetch(self, scope: ScopeKey, memory_id: str) -> tuple[tuple, StoredMemory]:
        """The row of `memory_id` in `scope` and its decoded record (`RowDamage` if it is damaged)."""
        row, lenient = self._fetchone(f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND id = ?", (str(scope), memory_id))
        if row is None:
            raise NotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        return row, self._decode(row, scope, check_text=lenient)

    @_guarded
    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        require_scope(scope)
        if not isinstance(memory_id, str):
            raise NotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        with self._lock:
            return self._fetch(scope, memory_id)[1]

    @_guarded
    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        require_scope(scope)
        patch = check_patch(patch)
        meta = metadata_json(patch.metadata) if patch.metadata is not None else None
        vector = None
        if patch.content is not None:
            vector = (await self._embed([patch.content]))[0]
        with self._lock:
            with self._write() as touch:
                row, current = self._fetch(scope, memory_id)
                updated = patch.apply(current)
                self._db.execute(
                    "UPDATE memories SET content = ?, status = ?, confidence = ?, metadata = ?, updated_at = ?"
                    + (", vector = ?" if vector is not None else "")
                    + " WHERE rowid = ?",
                    (
                        updated.content, updated.status.value, updated.confidence,
                        meta if meta is not None else metadata_json(updated.metadata), updated.updated_at,
                        *((_vector_blob(vector),) if vector is not None else ()),
                        row[0],
                    ),
                )
                touch.scopes.add(str(scope))
                touch.writes += 1
            part = self._partitions.get(scope)
            if part is not None:
                if vector is not None:  # content changed: simplest correct move is to rebuild
                    del self._partitions[scope]
                else:
                    part.set_status(row[0], _STATUS_CODES[updated.status])
        return updated

    @_guarded
    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        require_scope(scope)
        if not isinstance(memory_id, str):
            return False
        with self._lock:
            with self._write() as touch:
                row = self._db.execute("SELECT rowid FROM memories WHERE scope = ? AND id = ?", (str(scope), memory_id)).fetchone()
                if row is None:
                    return False
                self._db.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
                self._db.execute("DELETE FROM quarantine WHERE row_ref = ?", (row[0],))
                touch.scopes.add(str(scope))
                touch.writes += 1
            part = self._partitions.get(scope)
            if part is not None:
                part.remove(row[0])
        return True

    # -- reads --------------------------------------------------------------------------
    def _rowids_for(self, scope: ScopeKey, memory_ids: Iterable[str]) -> np.ndarray:
        ids = [i for i in memory_ids if isinstance(i, str)]
        found: list[int] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found += [r[0] for r in self._db.execute(f"SELECT rowid FROM memories WHERE scope = ? AND id IN ({marks})", (str(scope), *chunk))]
        return np.asarray(found, dtype=np.int64)

    def _expired_rowids(self, scope: ScopeKey, now: float) -> np.ndarray:
        """Rows of `scope` whose `expires_at` has passed: one query on the partial index
        `memories_expiring` (only rows that expire are in it; the purge keeps it small)."""
        rows = self._db.execute("SELECT rowid FROM memories WHERE scope = ? AND expires_at IS NOT NULL AND expires_at <= ?", (str(scope), now)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    @_guarded
    def search_vector(self, scopes: ScopeSet, vector: np.ndarray, *, limit: int = 10, statuses: frozenset[Status] = frozenset({Status.ACTIVE}), kinds: frozenset[str] | None = None, now: float | None = None) -> list[tuple[ScopeKey, int, float]]:
        """Exact top-`limit` over exactly the partitions of `scopes`: (scope, rowid, score).

        Filters (status, kind, an entry's memory ids) are applied to each partition's scores
        before the top-k: excluded rows score -inf and are never returned, so `limit` permitted
        rows come back whenever that many exist. Partitions score straight into one buffer (no
        concatenation); the status filter is a cached 0/-inf bias per partition; the
        (scope, rowid) mapping happens under the lock, before any concurrent swap-remove.
        """
        require_scope_set(scopes)  # also a forged, empty one
        valid_limit(limit)
        if not isinstance(statuses, frozenset) or not statuses or not all(isinstance(x, Status) for x in statuses):
            statuses = valid_statuses(statuses, allow_none=False)  # type: ignore[assignment]  # raises unless a usable collection
        allowed = _allowed_codes(statuses)
        at = time.time() if now is None else float(now)
        query = np.ascontiguousarray(vector, dtype=np.float32)
        if query.shape != (self.embedder.dimension,) or not np.isfinite(query).all():
            raise InvalidRequest(f"query vector must be {self.embedder.dimension} finite floats", backend=self.name)
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
                expired = self._expired_rowids(entry.key, at)
                if expired.size:  # expired rows are never candidates: excluded before the top-k
                    emask = ~np.isin(part.rowids[:n], expired)
                    mask = emask if mask is None else mask & emask
                if mask is not None:
                    seg[~mask] = -np.inf
                segments.append((entry.key, part.rowids[:n]))
                offset += n
                ends.append(offset)
            total = offset  # a load that quarantined rows may have shrunk a partition after sizing
            scores = scores[:total]
            if total == 0:
                return []
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

    def _load_hits(self, ranked: list[tuple[ScopeKey, int, float]]) -> tuple[list[Hit], int]:
        if not ranked:
            return [], 0
        marks = ",".join("?" * len(ranked))
        with self._lock:
            fetched, lenient = self._fetchall(f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({marks})", [r for _, r, _ in ranked])
            rows = {r[0]: r for r in fetched}
        hits = []
        damaged: list[tuple[int, str, str, str]] = []
        key_text = {key: str(key) for key in {r[0] for r in ranked}}
        for key, rowid, score in ranked:
            row = rows.get(rowid)
            if row is None:  # deleted between scan and load: never resurrect it
                continue
            if row[2] != key_text[key]:  # the row's stored scope is the only truth; mismatch -> drop
                continue
            try:  # str(ScopeKey) is injective, so the verified key IS the row's scope: no re-parse
                memory = row_to_memory(row, key, check_text=lenient)
            except RowDamage as damage:
                damaged.append((rowid, row[2], row[1], damage.reason))
                continue
            hits.append(Hit(memory, key, 0.0 if score < 0.0 else 1.0 if score > 1.0 else score))
        if damaged:
            with self._lock:
                self._quarantine(damaged)
        return hits, len(damaged)

    @_guarded
    def load_hits(self, ranked: list[tuple[ScopeKey, int, float]]) -> list[Hit]:
        return self._load_hits(ranked)[0]

    @_guarded
    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest(f"search expects a SearchQuery, got {type(query).__name__}", backend=self.name)
        if query.filters:
            unknown = ", ".join(sorted(map(str, query.filters)))
            raise UnsupportedFilter(f"the local backend supports no extra filters (got: {unknown})", backend=self.name)
        if not isinstance(query.text, str):
            raise InvalidRequest("query text must be a string", backend=self.name)
        (vector,) = await self._embed([encodable(query.text, "query text")])
        for _ in range(3):  # a row quarantined while loading hits is out of the partitions: rank again
            ranked = self.search_vector(query.scopes, vector, limit=query.limit, statuses=query.statuses, kinds=query.kinds, now=query.at())
            hits, damaged = self._load_hits(ranked)
            if not damaged:
                break
        return SearchResult(hits=tuple(hits))

    @_guarded
    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> list[StoredMemory]:
        require_scope(scope)
        statuses = valid_statuses(statuses, allow_none=True)
        valid_limit(limit)
        sql = f"SELECT {_COLUMNS} FROM memories WHERE scope = ?"
        params: list[object] = [str(scope)]
        if statuses is not None:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            params += [s.value for s in statuses]
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            rows, lenient = self._fetchall(sql, params)
            return self._decode_all(rows, check_text=lenient)

    @_guarded
    async def list_page(self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None) -> ListPage:
        """One page of `scope` in rowid (insertion) order. Rows written during a walk appear at
        its end; rows deleted during it (erasure deletes as it walks) never shift a page."""
        require_scope(scope)
        statuses = valid_statuses(statuses, allow_none=True)
        valid_limit(limit, _MAX_PAGE)
        after = _FIRST_ROWID if cursor is None else decode_cursor(self._cursor_key, scope, cursor)
        sql = f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND rowid > ?"
        params: list[object] = [str(scope), after]
        if statuses is not None:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            params += [s.value for s in statuses]
        sql += " ORDER BY rowid LIMIT ?"
        params.append(limit + 1)
        with self._lock:
            rows, lenient = self._fetchall(sql, params)
            more = len(rows) > limit
            rows = rows[:limit]
            memories = self._decode_all(rows, check_text=lenient)
        next_cursor = encode_cursor(self._cursor_key, scope, rows[-1][0]) if more else None
        return ListPage(memories=tuple(memories), next_cursor=next_cursor)

    @_guarded
    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        require_scope(scope)
        valid_key(idempotency_key, "idempotency_key")
        with self._lock:
            row, lenient = self._fetchone(f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND idempotency_key = ?", (str(scope), idempotency_key))
            return None if row is None else self._decode(row, scope, check_text=lenient)

    @_guarded
    async def list_scopes(self, tenant_id: str) -> list[ScopeKey]:
        valid_key(tenant_id, "tenant_id")
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT scope FROM memories WHERE tenant_id = ? ORDER BY scope", (tenant_id,)).fetchall()
        keys = []
        for (text,) in rows:
            try:
                keys.append(ScopeKey.parse(text))
            except (ValueError, TypeError):
                log.error("scope %r in %s does not parse; skipped", text, self._db_file)
        return keys

    @_guarded
    async def store_marker(self) -> StoreMarker:
        """This store's id and its committed-write count (read from the file, not a cache)."""
        with self._lock:
            return StoreMarker(store_id=self._store_id, writes=self._counter("writes"))

    @_guarded
    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Erasure, after the bridge deleted the memories it could list: delete the subject's
        quarantined rows that did not decode (so `list` skipped them) — in the subject's own
        private/agent scopes, or naming the subject as subject or author — and drop the decode
        caches that may still hold the subject's provenance or metadata in this process."""
        valid_key(tenant_id, "tenant_id")
        valid_key(subject_user_id, "subject_user_id")
        removed = 0
        with self._lock:
            with self._write() as touch:
                rows = self._db.execute(
                    "SELECT m.rowid, m.scope, m.subject_user_id, m.provenance FROM quarantine q"
                    " JOIN memories m ON m.rowid = q.row_ref AND m.id = q.memory_id WHERE m.tenant_id = ?",
                    (tenant_id,),
                ).fetchall()
                for rowid, scope_text, subject, prov in rows:
                    if self._names_subject(scope_text, subject, prov, subject_user_id):
                        self._db.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
                        self._db.execute("DELETE FROM quarantine WHERE row_ref = ?", (rowid,))
                        touch.scopes.add(scope_text)
                        touch.writes += 1
                        removed += 1
            for key in [k for k in self._partitions if str(k) in touch.scopes]:
                del self._partitions[key]
        clear_decode_caches()
        return removed

    @staticmethod
    def _names_subject(scope_text: str, subject: object, provenance: object, subject_user_id: str) -> bool:
        if subject == subject_user_id:
            return True
        try:
            key = ScopeKey.parse(scope_text)
            if key.personal_user_id == subject_user_id:  # private, agent-owned and task scopes
                return True
        except (ValueError, TypeError):
            pass
        try:
            return _provenance_from_json(provenance).author_user_id == subject_user_id  # type: ignore[arg-type]
        except (ValueError, TypeError, KeyError, AttributeError):
            return False

    # -- re-embedding (an explicit, whole-store change of vector space) -------------------
    @_guarded
    async def reembed(self, embedder: Embedder, *, batch_size: int = 256, max_passes: int = 5) -> int:
        """Re-embed every row with `embedder` and record its signature, committed in ONE
        transaction: the store is in the old space or the new one, never a mix.

        Vectors are computed first, outside any lock or transaction (the event loop keeps
        serving; they are held in memory, about 4 x dimension bytes per row); then, under the
        write lock and without awaiting, every row is checked against the content it was embedded
        from and written. Rows added or edited meanwhile are embedded in another pass (at most
        `max_passes`, then `Unavailable`: retry when writes are quieter). Another process that
        had the store open refuses its next search or write with `EmbedderMismatch` instead of
        reading vectors of another shape. Ids, contents and the `writes` counter do not change.
        Returns the number of rows re-embedded."""
        for name, value in (("batch_size", batch_size), ("max_passes", max_passes)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidRequest(f"{name} must be a positive integer", backend=self.name)
        staged: dict[int, tuple[str, bytes]] = {}  # rowid -> (content hash, new vector blob)
        for _ in range(max_passes):
            with self._lock:
                rows = self._db.execute("SELECT rowid, content, content_hash FROM memories ORDER BY rowid").fetchall()
            todo = [r for r in rows if staged.get(r[0], ("",))[0] != r[2]]
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                vectors = await self._embed_for(embedder, [r[1] if isinstance(r[1], str) else "" for r in chunk])
                staged.update((r[0], (r[2], _vector_blob(v))) for r, v in zip(chunk, vectors))
            with self._lock:
                try:
                    with self._write() as touch:
                        current = self._db.execute("SELECT rowid, scope, content_hash FROM memories").fetchall()
                        if any(staged.get(r[0], ("",))[0] != r[2] for r in current):
                            raise _StaleStaging("rows changed while re-embedding", backend=self.name)
                        self._db.executemany("UPDATE memories SET vector = ? WHERE rowid = ?", [(staged[r[0]][1], r[0]) for r in current])
                        self._db.executemany(
                            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                            [("embedder", embedder.signature), ("dimension", str(embedder.dimension))],
                        )
                        touch.scopes.update(r[1] for r in current)
                        touch.scopes.add("")  # a change number even for an empty store, so other processes look
                except _StaleStaging:
                    continue
                self.embedder = embedder
                self.embedder_note = describe_embedder(embedder)
                self._partitions.clear()
            log.warning("local store %s re-embedded: %d rows now in %s [%s]", self.path, len(current), self.embedder_note, embedder.signature)
            return len(current)
        raise Unavailable(f"the store kept changing during {max_passes} re-embedding passes; nothing was changed, retry", backend=self.name)

    async def _embed_for(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        """`embedder`'s vectors, checked like `_embed`'s: the right shape, finite."""
        try:
            vectors = await embedder.embed(texts)
        except VikingBridgeError:
            raise
        except Exception as exc:
            raise EmbeddingFailed(f"the embedder failed: {type(exc).__name__}", retryable=True) from exc
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(texts), embedder.dimension) or not np.isfinite(vectors).all():
            raise EmbeddingFailed(f"the embedder returned {vectors.shape} or non-finite values, expected {(len(texts), embedder.dimension)}", retryable=False)
        return vectors

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def quarantine_alarms(self) -> int:
        """How many rows this process has quarantined since it opened the store."""
        return self.alarms.count

    @property
    def store_id(self) -> str:
        return self._store_id

    @property
    def resident_vector_bytes(self) -> int:
        return sum(p.nbytes for p in self._partitions.values())

    @_guarded
    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with self._lock:
                self._partitions.clear()
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.path)!r}, embedder={self.embedder.signature})"
