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
change number. Before a search each process looks at the WAL-index header's commit stamp
(identity/storage/commits.py: no system call) and, when any connection has committed since its
last look, at `PRAGMA data_version`; when another process has committed, it reads only the
versions newer than the last it saw and drops only those partitions, so it never serves a memory
another process deleted and never reloads a scope nobody touched. Within a process, calls are
serialised by a lock; SQLite work is short and runs inline on the event loop (a put's fsync
blocks for ~1 ms).

Damaged rows. A row whose vector blob has the wrong length or holds NaN/inf, whose
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

Embedder identity. The store records its embedder's signature; all its vectors are in
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
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Callable

from adapters.base import Capabilities
from adapters.errors import EmbedderMismatch
from adapters.local.errors import CorruptStore, storage_errors
from adapters.local.holders import StoreHold
from adapters.local.listing import LocalListing
from adapters.local.maintenance import LocalMaintenance
from adapters.local.partitions import Partition
from adapters.local.schema import DB_FILENAME, SCHEMA_VERSION, create_or_upgrade, db_path, preflight, private_dir, recorded_embedder, tighten_files
from adapters.local.search import LocalSearch
from adapters.local.store import QuarantinedRow, guarded
from adapters.local.writes import LocalWrites
from adapters.scopes import ScopeKey
from adapters.shared.embedding import Embedder, default_embedder, describe_embedder, embedder_for_signature
from adapters.shared.envelope import RecordAlarms
from identity.storage.commits import CommitWatch
from identity.storage.sqlite import connect_durable

__all__ = ["LocalBackend", "DB_FILENAME", "SCHEMA_VERSION"]

log = logging.getLogger(__name__)


class LocalBackend(LocalWrites, LocalSearch, LocalListing, LocalMaintenance):
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
            self._hold = StoreHold(self.path)  # shared while open; re-embedding needs it alone
            try:
                self._db = connect_durable(self._db_file, busy_timeout_s=busy_timeout_s)
            except BaseException:
                self._hold.close()
                raise
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
                self._commits = CommitWatch(self._db_file)  # after the first read: the -shm file exists
                self._checked_stamp: bytes | None = None
        except BaseException:
            self._db.close()
            self._hold.close()
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


    # -- lifecycle ----------------------------------------------------------------------
    @property
    def quarantine_alarms(self) -> int:
        """How many rows this process has quarantined since it opened the store."""
        return self.alarms.count

    @property
    def store_id(self) -> str:
        return self._store_id

    @guarded
    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0])

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with self._lock:
                self._partitions.clear()
                self._forget_decoded()
                with contextlib.suppress(sqlite3.Error):
                    self._commits.close_with(self._db)
                self._hold.close()

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.path)!r}, embedder={self.embedder.signature})"
