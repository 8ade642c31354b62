"""The ground floor of `VikingBackend`: where a ScopeKey lives in Viking (collection,
principal) and how rows are fetched and checked before anything above sees them.

Why a base class of its own: Viking does not bind ids to the credential, so every read path
(get, list, search, erasure) must fetch through the same guard: a row leaves only if its single
user_id maps back to a queried scope, its stored scope string agrees and its envelope decodes;
anything else is dropped and alarmed. Keeping the fetch and the guard in one place means no read
path can skip them.

What it must never do: map two ScopeKeys to one principal, return a row that fails the guard, or
decide who may see what (it fetches exactly the scopes it is handed).
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from adapters.base import Status, StoredMemory
from adapters.errors import CorruptRecord, InvalidRequest
from adapters.scopes import ScopeKey, Visibility
from adapters.shared.envelope import MEMORY_ID
from adapters.viking.mapping import RECORD_FIELD, PrincipalMap, assistant_principal, decode_record, principal_for, prov_from_json, registry_principal

#: The same logger as the rest of this backend, whichever concern logs.
log = logging.getLogger("adapters.viking")


OUR_ID = MEMORY_ID
EXTRACTED_ID = re.compile(r"^x[A-Za-z0-9_\-]{1,128}\Z")


SERVICE_MAX_LIMIT = 5000


@dataclass
class FetchedRow:
    memory: StoredMemory
    viking_id: str
    score: float
    copies: list["FetchedRow"] = field(default_factory=list)  # every stored copy of this memory


@dataclass
class SearchTask:
    collection: str
    scopes: list[ScopeKey]
    group_ids: list[str] | None = None


# -- helpers ---------------------------------------------------------------------------------
def _score(row: Mapping[str, Any]) -> float:
    s = row.get("score")
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        return 0.0
    return max(0.0, min(1.0, float(s)))


def row_time(row: Mapping[str, Any]) -> int:
    t = row.get("time")
    return int(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0


def registry_marker_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The registry marker envelope a row carries (scope registration), or None for a memory row."""
    info = row.get("memory_info")
    if not isinstance(info, dict) or not isinstance(info.get(RECORD_FIELD), str):
        return None
    try:
        env = json.loads(info[RECORD_FIELD])
    except ValueError:
        return None
    return env if isinstance(env, dict) and env.get("marker") else None


def dedupe(rows: list[FetchedRow]) -> list[FetchedRow]:
    """One row per (scope, memory id), the best-scored; copies from retried writes collapse."""
    best: dict[tuple[ScopeKey, str], FetchedRow] = {}
    copies: dict[tuple[ScopeKey, str], list[FetchedRow]] = defaultdict(list)
    for r in rows:
        key = (r.memory.scope, r.memory.id)
        copies[key].append(r)
        if key not in best or r.score > best[key].score:
            best[key] = r
    return [FetchedRow(r.memory, r.viking_id, r.score, [c for c in copies[key] for c in (c.copies or [c])]) for key, r in best.items()]


def all_copies(rows: list[FetchedRow]) -> list[FetchedRow]:
    out: list[FetchedRow] = []
    for r in rows:
        out.extend(r.copies or [r])
    return out


def chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    size = max(1, size)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


class VikingRowsBase:
    """Scope -> collection/principal mapping and the guarded row fetch every read path uses."""

    # -- mapping --------------------------------------------------------------------------
    def collection_for(self, scope: ScopeKey) -> str:
        if scope.visibility is Visibility.GLOBAL:
            if not self.config.global_collection:
                raise InvalidRequest("the GLOBAL scope is refused: no global collection is configured", backend=self.name, scope=scope)
            return self.config.global_collection
        coll = self.config.collections.get(scope.tenant_id or "") or self.config.shared_collection
        if not coll:
            raise InvalidRequest(f"tenant {scope.tenant_id!r} has no Viking collection configured", backend=self.name, scope=scope)
        return coll

    def principal(self, scope: ScopeKey) -> str:
        return principal_for(scope, self._prefix)

    def _registry_of(self, scope: ScopeKey) -> str:
        return registry_principal(scope.tenant_id, self._prefix)

    def _assistant_for(self, scope: ScopeKey, agent_id: str | None) -> str | None:
        if scope.visibility in (Visibility.AGENT, Visibility.TASK):
            return assistant_principal(scope.tenant_id, scope.owner_id or "", self._prefix)
        if agent_id:
            return assistant_principal(scope.tenant_id, agent_id, self._prefix)
        return None

    # -- low-level fetch + guard ------------------------------------------------------------
    async def _search_rows(
        self, collection: str, principals: list[str], *, query: str | None, limit: int, extra: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        flt: dict[str, Any] = {"user_id": principals, "memory_type": self.config.search_types}
        if extra:
            flt.update(extra)
        return await self.client.search(collection, filter=flt, query=query, limit=limit, kind="event")

    async def _rows_to_memories(self, collection: str, rows: Iterable[dict[str, Any]], pmap: PrincipalMap) -> list[FetchedRow]:
        """Attribute each raw row to a scope or drop it. Never trusts anything but the principal
        table of this request plus the stored scope string, which must agree."""
        out: list[FetchedRow] = []
        pending: list[tuple[dict[str, Any], ScopeKey]] = []
        for row in rows:
            scope = self._scope_of_row(row, pmap)
            if scope is None:
                continue
            info = row["memory_info"]
            if RECORD_FIELD in info:
                vid = str(row.get("id") or "")
                try:
                    mem = decode_record(info, scope)
                    if mem.id != row.get("group_id") and mem.id != "x" + vid:  # x<id>: an updated extracted row
                        raise CorruptRecord("the record's id is not the row's group_id")
                except CorruptRecord as exc:
                    self.alarms.raise_alarm(scope, str(exc))
                    continue
                out.append(FetchedRow(mem, vid, _score(row)))
            else:
                pending.append((row, scope))
        if pending:
            out.extend(await self._extracted(collection, pending))
        return out

    def _scope_of_row(self, row: dict[str, Any], pmap: PrincipalMap) -> ScopeKey | None:
        users = row.get("user_id")
        if isinstance(users, str):
            users = [users]
        if not isinstance(users, list) or len(users) != 1 or not isinstance(users[0], str):
            log.warning("viking guard: dropped a row with no single principal")
            return None
        scope = pmap.scope_of(users[0])
        if scope is None:
            log.warning("viking guard: dropped a row from a principal outside the request")
            return None
        if not isinstance(row.get("memory_info"), dict):
            return None
        return scope

    async def _extracted(self, collection: str, pending: list[tuple[dict[str, Any], ScopeKey]]) -> list[FetchedRow]:
        """Rows the service extracted from a captured session: provenance from our capture record."""
        want: dict[str, ScopeKey] = {}
        for row, scope in pending:
            sid = row.get("session_id")
            if isinstance(sid, str) and sid not in self._captures:
                want[sid] = scope
        by_registry: dict[str, list[str]] = defaultdict(list)
        for sid, scope in want.items():
            by_registry[self._registry_of(scope)].append(sid)
        for registry, sids in by_registry.items():
            for chunk in chunks(sids, self.config.ids_per_call):
                rows = await self._search_rows(collection, [registry], query=None, limit=min(SERVICE_MAX_LIMIT, 2 * len(chunk) + 10), extra={"group_id": chunk})
                for r in rows:
                    env = registry_marker_of(r)
                    if env and env.get("marker") == "capture" and r.get("group_id") in chunk and r.get("user_id") in ([registry], registry):
                        try:
                            self._captures[r["group_id"]] = (env["scope"], prov_from_json(env["provenance"]))
                        except (KeyError, TypeError, ValueError):
                            continue
        out: list[FetchedRow] = []
        for row, scope in pending:
            sid, vid, info = row.get("session_id"), str(row.get("id") or ""), row["memory_info"]
            capture = self._captures.get(sid) if isinstance(sid, str) else None
            content = info.get("summary")
            if capture is None or capture[0] != str(scope) or not isinstance(content, str) or row.get("memory_type") not in self.config.extracted_event_types:
                log.warning("viking guard: dropped an extracted row without a matching capture record")
                continue
            mid = "x" + vid
            if not EXTRACTED_ID.match(mid):
                continue
            t = row.get("time")
            created = float(t) / 1000.0 if isinstance(t, (int, float)) else self._clock()
            subject = scope.owner_id if scope.visibility is Visibility.PRIVATE else scope.user_id
            mem = StoredMemory(
                id=mid,
                scope=scope,
                content=content,
                kind="event",
                status=Status.ACTIVE,
                confidence=1.0,
                provenance=capture[1],
                subject_user_id=subject,
                metadata={"source": "viking_extraction", "backend_session_id": sid},
                created_at=created,
                updated_at=created,
            )
            out.append(FetchedRow(mem, vid, _score(row)))
        return out

    async def _fetch_filtered(
        self,
        collection: str,
        scopes: list[ScopeKey],
        *,
        query: str | None,
        need: int,
        keep: Callable[[StoredMemory], bool],
        extra: Mapping[str, Any] | None = None,
    ) -> list[FetchedRow]:
        """Over-fetch until `need` rows pass `keep` or the candidates are exhausted (or 5000)."""
        pmap = PrincipalMap(scopes, self._prefix)
        cap = self.config.candidate_limit
        fetch = min(cap, max(need * self.config.first_fetch_factor, 30))
        while True:
            rows = await self._search_rows(collection, pmap.principals, query=query, limit=fetch, extra=extra)
            got = await self._rows_to_memories(collection, rows, pmap)
            kept = dedupe([r for r in got if keep(r.memory)])
            if len(kept) >= need or len(rows) < fetch or fetch >= cap:
                if len(rows) >= fetch >= cap and len(kept) < need:
                    log.info("viking search: candidate cap %d reached with %d of %d rows", cap, len(kept), need)
                return kept
            fetch = min(cap, fetch * 4)

    async def _by_id(self, scope: ScopeKey, memory_id: str) -> list[FetchedRow]:
        collection = self.collection_for(scope)
        if OUR_ID.match(memory_id):
            return await self._fetch_filtered(
                collection, [scope], query=None, need=1, keep=lambda m: m.id == memory_id, extra={"group_id": memory_id}
            )
        if EXTRACTED_ID.match(memory_id):
            rows = await self._fetch_filtered(collection, [scope], query=None, need=SERVICE_MAX_LIMIT, keep=lambda m: m.id == memory_id)
            return rows
        return []
