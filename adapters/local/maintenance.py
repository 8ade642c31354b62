"""Whole-store operations of the local backend: the store marker, erasure of a subject's
traces, and re-embedding into a new vector space.

Why apart from the per-request paths: these walk many scopes (or the whole store) in one
transaction and are called by the bridge's administration and recovery code, not by a recall.
What it must never do: re-embed part of a store (it is all in one transaction, or nothing),
erase anything but rows naming the subject, or report a marker that is behind the data.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from adapters.base import StoreMarker
from adapters.errors import InvalidRequest, BackendUnavailable
from adapters.local import lexical
from adapters.local.checks import valid_key
from adapters.local.errors import EmbeddingFailed
from adapters.local.partitions import Partition
from adapters.local.records import _provenance_from_json, clear_decode_caches
from adapters.local.store import LocalStoreBase, guarded, vector_blob
from adapters.scopes import ScopeKey
from adapters.shared.embedding import Embedder, describe_embedder
from identity.errors import VikingBridgeError

#: One logger for the whole local backend, whichever concern logs.
log = logging.getLogger("adapters.local.backend")


class _StaleStaging(BackendUnavailable):
    """Rows changed between embedding and committing a re-embed: another pass is needed (never
    leaves `reembed`; a member of the tree like every raise here)."""


class LocalMaintenance(LocalStoreBase):
    """store_marker / warm / erase_subject_traces / reembed."""

    @guarded
    async def store_marker(self) -> StoreMarker:
        """This store's id and its committed-write count (read from the file, not a cache)."""
        with self._lock:
            return StoreMarker(store_id=self._store_id, writes=self._counter("writes"))

    @guarded
    def warm(self, *, max_bytes: int | None = None, stop: threading.Event | None = None) -> int:
        """Load the partitions of the store's scopes, largest first, while the resident vectors
        and records (`Partition.RECORD_BYTES` a record, an estimate) stay within `max_bytes`
        (None: every scope); returns how many were loaded now.

        Why: a scope's first search reads its rows from SQLite, one scattered B-tree lookup per
        row (about 5-15 us a row on a 2-core machine), so the first recall of each scope after a
        restart is the tail a replica's users feel. A replica warms before (or while) it takes
        traffic instead. Each partition is loaded under the lock on its own, so searches run
        between two loads; a scope text that does not parse is left to the search path, which
        never asks for it. Nothing is read that a search could not read: a partition is what
        its scope's first search would load, with the same checks and quarantine.

        `stop`: once set (a service shutting down), no further partition is loaded, so a
        shutdown waits for one partition's load at most, never for the rest of the warm-up."""
        if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0):
            raise InvalidRequest(f"max_bytes must be a non-negative integer or None, got {max_bytes!r}", backend=self.name)
        with self._lock:
            sizes, _ = self._fetchall("SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY count(*) DESC, scope")
        # a loaded row holds its vector and codes and, about, its decoded record
        row_bytes = Partition.bytes_per_row(self.embedder.dimension) + Partition.RECORD_BYTES
        with self._lock:  # summed once, then kept up to date: not once per scope
            resident = self.resident_vector_bytes + Partition.RECORD_BYTES * sum(len(p.decoded) for p in self._partitions.values())
        loaded = 0
        for scope_text, rows in sizes:
            if self._closed or (stop is not None and stop.is_set()):  # shutting down: stop, nothing half-loaded
                break
            if max_bytes is not None and resident + rows * row_bytes > max_bytes:
                continue  # a smaller scope may still fit
            try:
                key = ScopeKey.parse(scope_text)
            except (InvalidRequest, TypeError):
                continue
            with self._lock:
                self._refresh_if_changed_elsewhere()
                if key not in self._partitions:
                    part = self._partition(key)
                    resident += part.nbytes + Partition.RECORD_BYTES * len(part.decoded)
                    loaded += 1
        return loaded

    @guarded
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
                        lexical.unindex_rows(self._db, [rowid])
                        touch.scopes.add(scope_text)
                        touch.writes += 1
                        removed += 1
            for key in [k for k in self._partitions if str(k) in touch.scopes]:
                del self._partitions[key]
            self._forget_decoded()  # decoded hits of any scope may carry the subject's provenance
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
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):  # nested too deep to parse: names no author
            return False

    # -- re-embedding (an explicit, whole-store change of vector space) -------------------
    @guarded
    async def reembed(self, embedder: Embedder, *, batch_size: int = 256, max_passes: int = 5) -> int:
        """Re-embed every row with `embedder` and record its signature, committed in ONE
        transaction: the store is in the old space or the new one, never a mix.

        Vectors are computed first, outside any lock or transaction (the event loop keeps
        serving; they are held in memory, about 4 x dimension bytes per row); then, under the
        write lock and without awaiting, every row is checked against the content it was embedded
        from and written. Rows added or edited meanwhile are embedded in another pass (at most
        `max_passes`, then `BackendUnavailable`: retry when writes are quieter). It runs only while
        no other process (or other backend of this process) has the store open: otherwise
        `StoreInUse` before anything changes (adapters/local/holders.py), so a running service is
        never left with vectors of another space. Ids, contents and the `writes` counter do not change.
        Returns the number of rows re-embedded."""
        for name, value in (("batch_size", batch_size), ("max_passes", max_passes)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidRequest(f"{name} must be a positive integer", backend=self.name)
        with self._hold.exclusive("re-embed the store in place"):  # StoreInUse while anybody else has it open
            return await self._reembed_alone(embedder, batch_size, max_passes)

    async def _reembed_alone(self, embedder: Embedder, batch_size: int, max_passes: int) -> int:
        staged: dict[int, tuple[str, bytes]] = {}  # rowid -> (content hash, new vector blob)
        for _ in range(max_passes):
            with self._lock:
                rows = self._db.execute("SELECT rowid, content, content_hash FROM memories ORDER BY rowid").fetchall()
            todo = [r for r in rows if staged.get(r[0], ("",))[0] != r[2]]
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                vectors = await self._embed_for(embedder, [r[1] if isinstance(r[1], str) else "" for r in chunk])
                staged.update((r[0], (r[2], vector_blob(v))) for r, v in zip(chunk, vectors))
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
                self._forget_decoded()
            log.warning("local store %s re-embedded: %d rows now in %s [%s]", self.path, len(current), self.embedder_note, embedder.signature)
            return len(current)
        raise BackendUnavailable(f"the store kept changing during {max_passes} re-embedding passes; nothing was changed, retry", backend=self.name)

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
