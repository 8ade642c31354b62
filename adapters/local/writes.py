"""Writes of the local backend: `put`, `put_many`, `update`, `delete`.

Each write is one SQLite transaction (WAL, fsync on commit) that also stamps the ScopeKeys it
touched and counts itself in `writes`, so the partitions and the store marker can never be
behind the data. What it must never do: store into any scope but the ScopeKey it is given,
acknowledge a write before it is committed, or leave a row without its vector (or the reverse)
after a failure; a retried put with the same idempotency key returns the first record.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Sequence

import numpy as np

from adapters.base import MemoryPatch, NewMemory, Status, StoredMemory, require_scope
from adapters.errors import BackendConflict, InvalidRequest
from adapters.local import lexical
from adapters.local.checks import check_new, check_patch, valid_key
from adapters.local.records import COLUMNS as _COLUMNS, STATUS_CODES as _STATUS_CODES, content_hash, metadata_json, provenance_json
from adapters.local.store import LocalStoreBase, guarded, vector_blob
from adapters.scopes import ScopeKey


class LocalWrites(LocalStoreBase):
    """put / put_many / update / delete, each one committed transaction (see the module docstring)."""

    # -- writes -------------------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        (stored,) = await self.put_many([(scope, memory, idempotency_key)])
        return stored

    @guarded
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
        indexed: list[tuple[int, str, str]] = []
        with self._lock:
            with self._write() as touch:
                for (scope, scope_text, memory, key, digest, prov, meta), vector in zip(prepared, vectors):
                    existing, lenient = self._fetchone(f"SELECT {_COLUMNS}, content_hash FROM memories WHERE scope = ? AND idempotency_key = ?", (scope_text, key))
                    if existing is not None:
                        if existing[-1] != digest:
                            raise BackendConflict(f"idempotency key {key!r} was already used for different content", backend=self.name, scope=scope)
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
                            key, digest, vector_blob(vector), stored.expires_at,
                        ),
                    )
                    touch.scopes.add(scope_text)
                    touch.writes += 1
                    fresh.append((scope, int(cursor.lastrowid), stored.status, stored.kind, vector, stored.expires_at))
                    indexed.append((int(cursor.lastrowid), scope_text, stored.content))
                    results.append(stored)
                lexical.index_rows(self._db, indexed)  # the lexical index commits (or not) with the rows
            # committed: only now do the vectors become searchable
            for scope, rowid, status, kind, vector, expires_at in fresh:
                if scope in self._partitions:
                    self._partitions[scope].append(
                        np.array([rowid]), np.array([_STATUS_CODES[status]]), np.array([self._kind_code(kind)]), vector[None, :],
                        earliest_expiry=expires_at,
                    )
        return results

    @guarded
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
                        *((vector_blob(vector),) if vector is not None else ()),
                        row[0],
                    ),
                )
                if patch.content is not None:  # the lexical index follows the content, in the same transaction
                    lexical.unindex_rows(self._db, [row[0]])
                    lexical.index_rows(self._db, [(row[0], str(scope), updated.content)])
                touch.scopes.add(str(scope))
                touch.writes += 1
            part = self._partitions.get(scope)
            if part is not None:
                if vector is not None:  # content changed: simplest correct move is to rebuild
                    del self._partitions[scope]
                else:
                    part.set_status(row[0], _STATUS_CODES[updated.status])
        return updated

    @guarded
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
                lexical.unindex_rows(self._db, [row[0]])
                touch.scopes.add(str(scope))
                touch.writes += 1
            part = self._partitions.get(scope)
            if part is not None:
                part.remove(row[0])
        return True
