"""The open local store underneath `LocalBackend`: one SQLite connection, its write
transactions, cross-process cache coherence, the numpy partition cache, row decoding and
quarantine.

Why a base class of its own: every concern of the backend (writes, search, listing,
maintenance) stands on these few primitives, and keeping them in one place means there is one
definition of "a write transaction", "a stale partition" and "a damaged row". `guarded` wraps
every public method of every concern: the closed-store check, SQLite errors mapped into the
tree, a damaged row quarantined.

What it must never do: decide who may see what (it loads the partition of the ScopeKey it is
given, nothing wider), serve a partition another process has changed without reloading it, or
let a raw `sqlite3` error or a damaged row escape unmapped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import sqlite3
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from adapters.base import Status, StoredMemory
from adapters.errors import BackendError, EmbedderMismatch, BackendNotFound, BackendUnavailable
from adapters.local.errors import CorruptStore, DamagedRecord, storage_error, storage_errors
from adapters.local.partitions import Partition
from adapters.local.records import COLUMNS as _COLUMNS, STATUS_CODES as _STATUS_CODES, RowDamage, encodable_text, lenient_text, memories_of_columns, row_to_memory
from adapters.local.schema import recorded_embedder
from adapters.scopes import ScopeKey

#: One logger for the whole local backend, whichever concern logs.
log = logging.getLogger("adapters.local.backend")


_STATUS_CODE_BY_VALUE = {s.value: code for s, code in _STATUS_CODES.items()}

#: What a partition load reads of each row of its scope: what the scan needs (rowid, id, status,
#: kind, vector, expiry) and then the record's other columns, so the row's page, read anyway for
#: its vector, also yields the record a recall returns (`Partition.decoded`).
_PARTITION_COLUMNS = (
    "m.rowid, m.id, m.status, m.kind, CAST(m.vector AS BLOB), typeof(m.vector) = 'blob', m.expires_at,"
    " m.content, m.confidence, m.provenance, m.subject_user_id, m.metadata, m.created_at, m.updated_at"
)


@dataclasses.dataclass(frozen=True, slots=True)
class QuarantinedRow:
    """A row taken out of the searchable set. Carries ids and a reason, never content."""

    scope: str  # the stored scope text (it may itself be what does not parse)
    memory_id: str
    reason: str
    detected_at: float


@dataclasses.dataclass
class _Touch:
    """What one write transaction changed: the scopes to stamp and the writes to count."""

    scopes: set[str] = dataclasses.field(default_factory=set)
    writes: int = 0


def guarded(method: Callable) -> Callable:
    """Every public method: closed-store check, SQLite errors mapped, a damaged row quarantined.
    (A plain try/except rather than `storage_errors`: this wraps the recall hot path.)"""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run(self: "LocalStoreBase", *args: Any, **kwargs: Any) -> Any:
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
    def run_sync(self: "LocalStoreBase", *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            self._ensure_open()
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(exc, self._db_file) from exc
        except RowDamage as damage:
            raise self._damaged(damage) from None

    return run_sync


def vector_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _scope_key_or_none(scope_text: str) -> ScopeKey | None:
    """The key a stored scope text names; None for a text no partition can be loaded for."""
    try:
        return ScopeKey.parse(scope_text)
    except (ValueError, TypeError):
        return None


@functools.lru_cache(maxsize=64)
def allowed_status_codes(statuses: frozenset[Status]) -> tuple[int, ...]:
    return tuple(sorted(_STATUS_CODES[s] for s in statuses))


class LocalStoreBase:
    """Connection, transactions, partition cache and row decoding shared by every concern of `LocalBackend`."""

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
        finally:  # committed or not, a touched scope's decoded rows are not trusted again
            if touch.scopes:
                self._forget_decoded(touch.scopes)
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
            self._forget_decoded()
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

    # -- decoded records, held by their partitions ------------------------------------------
    # A partition load decodes every sound row of its scope (`_partition_of`), and `_load_hits`
    # adds the rows it had to read from SQLite since; they live exactly as long as their
    # partition, so the resident partitions bound them (no separate cap to evict by).
    def _forget_decoded(self, scope_texts: Iterable[str] | None = None) -> None:
        """Drop the decoded rows of these scopes' partitions (all partitions: None). Called by
        every write transaction for the scopes it touched, committed or not, so a forgotten,
        changed or moved memory is read from SQLite again (and kept again from there); a
        partition that is dropped or reloaded takes its own rows with it."""
        if scope_texts is None:
            parts = list(self._partitions.values())
        else:
            parts = [p for p in map(self._partitions.get, filter(None, map(_scope_key_or_none, scope_texts))) if p is not None]
        for part in parts:
            part.decoded.clear()

    def _refresh_if_changed_elsewhere(self) -> None:
        """Absorb what other connections committed since the last look. Skipped when the WAL-index
        header shows no commit at all since the last full check (identity/storage/commits.py):
        its stamp is read first, so a commit during the full check is seen next time."""
        stamp = self._commits.stamp()
        if stamp is not None and stamp == self._checked_stamp:
            return
        if self._current_data_version() != self._data_version:
            self._absorb_foreign_changes()
        self._checked_stamp = stamp

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

    @property
    def resident_vector_bytes(self) -> int:
        """What the loaded partitions hold in memory (vectors, rowids, status and kind codes)."""
        return sum(p.nbytes for p in self._partitions.values())

    def _partition(self, scope: ScopeKey) -> Partition:
        part = self._partitions.get(scope)
        if part is not None:
            return part
        self.partition_loads[scope] += 1
        dim = self.embedder.dimension
        rows, lenient = self._fetchall(
            f"SELECT {_PARTITION_COLUMNS} FROM memories m WHERE m.scope = ?"
            " AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.row_ref = m.rowid AND q.memory_id = m.id)",
            (str(scope),),
        )
        part, damaged = None, []
        if rows and not lenient:  # the common case, all rows sound: built column by column
            part = self._sound_partition(scope, rows, dim)
        if part is None:
            part, damaged = self._checked_partition(scope, rows, lenient, dim)
        self._partitions[scope] = part
        if damaged:
            self._quarantine(damaged)
        return part

    def _sound_partition(self, scope: ScopeKey, rows: list[tuple], dim: int) -> Partition | None:
        """The partition of `rows` when every row is sound (known status, a vector blob of the
        right size holding finite floats); None if any row is not (then `_checked_partition`
        sorts them one by one)."""
        _, _, statuses, _, blobs, is_blob, *_ = zip(*rows)
        if not all(is_blob) or not all(map((4 * dim).__eq__, map(len, blobs))) or not set(statuses) <= _STATUS_CODE_BY_VALUE.keys():
            return None
        matrix = np.frombuffer(bytearray().join(blobs), dtype=np.float32).reshape(len(rows), dim)  # writable: no copy in from_rows
        if not np.isfinite(matrix).all():
            return None
        return self._partition_of(scope, rows, matrix, dim, lenient=False)

    def _partition_of(self, scope: ScopeKey, rows: Sequence[tuple], matrix: np.ndarray, dim: int, *, lenient: bool) -> Partition:
        """The partition of sound rows and their vectors (`matrix`, one row each), column by
        column, holding the decoded record of every row whose record columns decode too (the
        others, and rows read `lenient`ly, are left to `_load_hits`, which quarantines them)."""
        rowids, ids, statuses, kinds, _, _, expiries, contents, confidences, provenances, subjects, metadatas, created, updated = zip(*rows)
        codes = {k: self._kind_code(k) for k in set(kinds)}
        part = Partition.from_rows(
            dim, np.fromiter(rowids, dtype=np.int64, count=len(rows)),
            np.fromiter(map(_STATUS_CODE_BY_VALUE.__getitem__, statuses), dtype=np.int8, count=len(rows)),
            np.fromiter(map(codes.__getitem__, kinds), dtype=np.int32, count=len(rows)), matrix,
        )
        part.next_expiry = min((float(e) for e in expiries if isinstance(e, (int, float))), default=part.next_expiry)
        if not lenient:  # text read with surrogate escapes is never kept: the lazy path checks and quarantines it
            memories = memories_of_columns(scope, ids, contents, kinds, statuses, confidences, provenances, subjects, metadatas, created, updated, expiries)
            part.decoded = {rowid: memory for rowid, memory in zip(rowids, memories) if memory is not None}
        return part

    def _checked_partition(self, scope: ScopeKey, rows: list[tuple], lenient: bool, dim: int) -> tuple[Partition, list[tuple[int, str, str, str]]]:
        """The partition of the sound rows among `rows`, and (rowid, scope, id, reason) of the others."""
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
        return (self._partition_of(scope, good, matrix, dim, lenient=lenient) if good else Partition(dim)), damaged

    # -- quarantine ---------------------------------------------------------
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

    @guarded
    async def quarantined(self) -> list[QuarantinedRow]:
        """Every quarantined row of the store (ids and reasons only; an operator/audit view)."""
        with self._lock:
            rows = self._db.execute("SELECT scope, memory_id, reason, detected_at FROM quarantine ORDER BY detected_at, row_ref").fetchall()
        return [QuarantinedRow(*r) for r in rows]

    def _ensure_open(self) -> None:
        if self._closed:
            raise BackendUnavailable("the local store is closed", backend=self.name)

    async def _embed(self, texts: list[str]) -> np.ndarray:
        """The embedder's vectors, checked: the wrong shape or a NaN must never reach a partition."""
        return await self._embed_for(self.embedder, texts)

    def _fetch(self, scope: ScopeKey, memory_id: str) -> tuple[tuple, StoredMemory]:
        """The row of `memory_id` in `scope` and its decoded record (`RowDamage` if it is damaged)."""
        row, lenient = self._fetchone(f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND id = ?", (str(scope), memory_id))
        if row is None:
            raise BackendNotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        return row, self._decode(row, scope, check_text=lenient)
