"""Reads of the local backend by place and id: `get`, `list`, `list_page`,
`find_by_idempotency_key`, `list_scopes`.

Each read names one ScopeKey (or, for `list_scopes`, one tenant) and returns only what is
stored there. What it must never do: return a memory of another scope, accept a cursor signed
for another scope or edited by hand, or hide a quarantined row from listings (erasure must find
it).
"""

from __future__ import annotations

import logging

from adapters.base import ListPage, Status, StoredMemory, require_scope
from adapters.errors import BackendNotFound
from adapters.local.checks import valid_key, valid_limit, valid_statuses
from adapters.local.cursor import decode_cursor, encode_cursor
from adapters.local.records import COLUMNS as _COLUMNS
from adapters.local.store import LocalStoreBase, guarded
from adapters.scopes import ScopeKey

#: One logger for the whole local backend, whichever concern logs.
log = logging.getLogger("adapters.local.backend")


_MAX_PAGE = 10_000
_FIRST_ROWID = -(2**63)


class LocalListing(LocalStoreBase):
    """Reads by ScopeKey and id; cursors are signed and bound to their scope."""

    @guarded
    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        require_scope(scope)
        if not isinstance(memory_id, str):
            raise BackendNotFound(f"no memory {memory_id!r}", backend=self.name, scope=scope)
        with self._lock:
            return self._fetch(scope, memory_id)[1]

    @guarded
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

    @guarded
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

    @guarded
    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        require_scope(scope)
        valid_key(idempotency_key, "idempotency_key")
        with self._lock:
            row, lenient = self._fetchone(f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND idempotency_key = ?", (str(scope), idempotency_key))
            return None if row is None else self._decode(row, scope, check_text=lenient)

    @guarded
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
