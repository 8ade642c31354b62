"""The memories of one scope on the OpenViking backend: put, get, update, delete, list,
list_page and the lookup by idempotency key.

Each call names one ScopeKey and works as that ScopeKey's principal only. What it must never do:
touch a record under another principal, accept a cursor signed for another scope, or return a
record whose envelope names another place than the one it was read from.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Sequence

from adapters.base import ListPage, MemoryPatch, NewMemory, Status, StoredMemory, require_scope
from adapters.errors import InvalidRequest, BackendNotFound
from adapters.openviking.errors import OVNotFound
from adapters.openviking.extraction import extracted_id
from adapters.openviking.mapping import Principal, check_memory_id
from adapters.openviking.principals import OpenVikingPrincipalsBase
from adapters.scopes import ScopeKey, Visibility
from adapters.shared.envelope import memory_id_for


class OpenVikingMemories(OpenVikingPrincipalsBase):
    """put / get / update / delete / list / list_page / find_by_idempotency_key under one principal."""

    # -- MemoryBackend --------------------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        scope = require_scope(scope)
        if not isinstance(memory, NewMemory):
            raise InvalidRequest("put needs a NewMemory")
        p = self.mapper.principal(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        async with self._lock("mem:" + p.memory_uri(memory_id)):
            try:
                return replace(await self._read_record(p, memory_id, create=True), created=False)
            except BackendNotFound:
                pass
            stored = StoredMemory.from_new(memory_id, scope, memory)
            await self._write_record(p, stored)  # mode=replace on a deterministic URI: a retry rewrites, never duplicates
            return replace(stored, created=True)

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        """The memory a put with this key stored in `scope` (its file exists), or None."""
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        if await self._auth(p, create=False) is None:
            return None  # nothing was ever stored for this principal
        try:
            return await self._read_record(p, memory_id)
        except BackendNotFound:
            return None

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        try:
            check_memory_id(memory_id)
        except InvalidRequest:
            raise BackendNotFound(f"no memory {str(memory_id)[:40]!r}", backend=self.name, scope=scope) from None
        try:
            return await self._read_record(p, memory_id)
        except BackendNotFound:
            extracted = await self._extracted_memory(p, memory_id)
            if extracted is None:
                raise
            return extracted

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        current = await self.get(scope, memory_id)
        if current.metadata.get("source") == "openviking_extraction":
            try:
                await self._read_record(p, current.id)
            except BackendNotFound:
                raise InvalidRequest("memories extracted by the server are read-only here (delete them instead)",
                                     backend=self.name, scope=scope) from None
        async with self._lock("mem:" + p.memory_uri(current.id)):
            current = await self._read_record(p, current.id)
            updated = patch.apply(current)
            await self._write_record(p, updated)
            return updated

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        try:
            check_memory_id(memory_id)
            await self._read_record(p, memory_id)
        except InvalidRequest:
            return False
        except BackendNotFound:
            extracted = await self._extracted_memory(p, memory_id)
            if extracted is None:
                return False
            index = await self._extraction_index(p)
            f = index.by_id(memory_id)
            if f is None:
                return False
            async with self._lock("mem:" + f.uri):
                try:
                    await self._call(p, False, lambda auth: self._client.delete(auth, f.uri, wait=True))
                except OVNotFound:
                    return False
                index.files.pop(f.uri, None)
            return True
        uri = p.memory_uri(memory_id)
        async with self._lock("mem:" + uri):
            await self._call(p, False, lambda auth: self._client.delete(auth, uri, wait=True))
        return True

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        ids = await self._record_ids(p)
        records: list[StoredMemory | None] = list(await asyncio.gather(*(self._read_quietly(p, mid) for mid in ids)))
        if scope.visibility is Visibility.PRIVATE and (statuses is None or Status.ACTIVE in statuses):
            index = await self._extraction_index(p, force=True)
            found = await asyncio.gather(*(self._extracted_memory(p, extracted_id(scope, f.uri)) for f in list(index.files.values())))
            records.extend(found)
        out = [r for r in records if r is not None and (statuses is None or r.status in statuses)]
        out.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return out[:limit]

    async def list_page(
        self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None
    ) -> ListPage:
        """One page of the scope's memories in id order (record files, then — for a private scope
        — the memories the server extracted); pass `next_cursor` back for the next page.

        0.5.2 lists at most 1000 entries per `fs/ls`, so the directory is walked in name-sorted
        windows. The cursor (signed, bound to `scope`: `adapters.shared.cursor`) holds the last id
        returned and where it was; the walk resumes after that id even when deletions in between
        shifted the listing (it steps back until the window starts at or before the id)."""
        scope = require_scope(scope)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidRequest("limit must be a positive integer", backend=self.name, scope=scope)
        state = self._cursors.open(scope, cursor) if cursor is not None else {"p": "r", "a": "", "o": 0}
        phase, after, hint = state.get("p"), state.get("a"), state.get("o")
        if phase not in ("r", "x") or not isinstance(after, str) or isinstance(hint, bool) or not isinstance(hint, int) or hint < 0:
            raise InvalidRequest("malformed cursor", backend=self.name, scope=scope)
        p = self.mapper.principal(scope)
        out: list[StoredMemory] = []

        def page(next_state: dict[str, Any] | None) -> ListPage:
            return ListPage(tuple(out), self._cursors.mint(scope, next_state) if next_state is not None else None)

        if phase == "r":
            window = max(1, min(self._ls_window, limit + 50))
            offset = max(0, hint - window)
            while True:
                try:
                    entries, more = await self._call(p, False, lambda a, o=offset: self._client.ls_page(a, p.memory_dir, offset=o, limit=window))
                except OVNotFound:
                    break  # nothing was ever stored here
                ids = [(offset + i, mid) for i, e in enumerate(entries) if not e.get("isDir") and (mid := p.memory_id_of(e.get("uri")))]
                if offset > 0 and ids and ids[0][1] > after:
                    offset = max(0, offset - window)  # deletions shifted the listing left: look further back
                    continue
                todo = [(pos, mid) for pos, mid in ids if mid > after]
                while todo:
                    chunk, todo = todo[: limit - len(out)], todo[limit - len(out):]
                    records = await asyncio.gather(*(self._read_quietly(p, mid) for _, mid in chunk))
                    for (pos, mid), record in zip(chunk, records):
                        after, hint = mid, pos + 1
                        if record is not None and (statuses is None or record.status in statuses):
                            out.append(record)
                    if len(out) >= limit:
                        return page({"p": "r", "a": after, "o": hint})
                if not more or not entries:
                    break
                offset += len(entries)
            phase, after = "x", ""
            if len(out) >= limit:
                return page({"p": "x", "a": "", "o": 0})
        if scope.visibility is Visibility.PRIVATE and p.peer is None and (statuses is None or Status.ACTIVE in statuses):
            index = await self._extraction_index(p, force=True)
            for mid in sorted(m for f in list(index.files.values()) if (m := extracted_id(scope, f.uri)) > after):
                found = await self._extracted_memory(p, mid)
                after = mid
                if found is not None:
                    out.append(found)
                if len(out) >= limit:
                    return page({"p": "x", "a": after, "o": 0})
        return page(None)

    async def _record_ids(self, p: Principal) -> list[str]:
        """Every record id in the scope's directory (fs/ls answers at most 1000 entries a call)."""
        ids: list[str] = []
        offset = 0
        while True:
            try:
                entries, more = await self._call(p, False, lambda a, o=offset: self._client.ls_page(a, p.memory_dir, offset=o, limit=self._ls_window))
            except OVNotFound:
                return ids
            ids += [mid for e in entries if not e.get("isDir") and (mid := p.memory_id_of(e.get("uri")))]
            if not more or not entries:
                return ids
            offset += len(entries)

    async def _read_quietly(self, p: Principal, memory_id: str) -> StoredMemory | None:
        async with self._read_slots:
            try:
                return await self._read_record(p, memory_id)
            except BackendNotFound:
                return None
