"""`VikingBackend`: the MemoryBackend protocol over hosted Viking Memory.

It stores and searches memories where it is told and never decides who may see what. Viking
does not bind ids to the credential (any key holder can name any user_id), so this adapter is
where the ScopeSet becomes the query filter, and where every hit is checked against it again:

- tenant -> collection (configured; a tenant without one is refused, GLOBAL needs its own);
- every ScopeKey -> one opaque principal sent as `user_id` (`mapping.principal_for`), agent
  scopes also carry an informational `assistant_id`;
- a record's fields (kind, status, confidence, provenance, subject, metadata, our id) travel in
  `memory_info.vb_record` (the shared envelope, `adapters.shared.envelope`); our id is deterministic
  from (scope, idempotency key) and is sent as `group_id`, so id lookups and deletes are exact
  filters; a record that does not decode is dropped and alarmed (`self.alarms`), never returned;
- the service makes event ids itself and a write is searchable only after a lag, so retries are
  made idempotent by a bridge-side write ledger (`adapters.viking.ledger`): the exact call is
  recorded before it is sent, and `reconcile_writes` removes the copies a lost answer left;
- `search` never raises for a failed backend call: the scopes land in `failed_scopes` with a
  redacted reason (one scope failing and all of them read alike); it raises only for a malformed
  query or a scope with no collection configured;
- a hit leaves only if its single user_id maps back to a queried scope, its stored scope string
  agrees, and `ScopeSet.permits(scope, id)` holds; anything else is dropped and logged.

Limits (see docs/viking.md): searches over-fetch up to 5000 candidates per call (the service's
maximum; there is no cursor), so status/kind filtering returns `limit` hits whenever they are
among the first 5000 candidates of the searched principals; writes become searchable after a lag.
Expiry: Viking's documented search filter has no field for it (ids, memory_type, start/end of
the event time only), so `expires_at` travels in the envelope and expired records are dropped
with status and kind, before a hit leaves (`Capabilities.expiry_in_query=False` says so).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

from adapters.base import (
    Capabilities,
    CaptureReceipt,
    ConversationMessage,
    Hit,
    ListPage,
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
from adapters.shared.cursor import CursorCodec
from adapters.shared.envelope import MEMORY_ID, RecordAlarms, memory_id_for
from adapters.errors import (
    BackendError,
    BackendMisconfigured,
    CorruptRecord,
    InvalidRequest,
    NotFound,
    RetryLater,
    Unavailable,
    UnsupportedFilter,
)
from adapters.shared.http import certainly_not_applied
from adapters.scopes import ScopeKey, ScopeSet, Visibility
from adapters.viking.client import VikingMemoryClient
from adapters.viking.ledger import LedgerRow, WriteLedger
from adapters.viking.mapping import (
    RECORD_FIELD,
    PrincipalMap,
    assistant_principal,
    backend_session_id,
    check_prefix,
    decode_record,
    encode_new,
    encode_record,
    principal_for,
    prov_from_json,
    registry_principal,
    scope_marker_id,
)
from identity.ids import validate_id

__all__ = ["VikingBackend", "VikingConfig"]

log = logging.getLogger("adapters.viking")

_OUR_ID = MEMORY_ID
_EXTRACTED_ID = re.compile(r"^x[A-Za-z0-9_\-]{1,128}\Z")
MAX_MESSAGES = 1000
SERVICE_MAX_LIMIT = 5000


@dataclass(frozen=True)
class VikingConfig:
    """Where each tenant's memories live and how names are made.

    `collections`: tenant_id -> collection (the recommended one-collection-per-tenant mapping).
    `shared_collection`: explicit opt-in for tenants without their own collection (principals are
    tenant-qualified hashes, so tenants stay apart, but one key then reaches them all).
    `global_collection`: required before the GLOBAL scope can be read or written.
    `principal_prefix`: `[A-Za-z][A-Za-z0-9]{0,15}`; a unique one per run isolates a live test.
    """

    collections: Mapping[str, str] = field(default_factory=dict)
    shared_collection: str | None = None
    global_collection: str | None = None
    event_type: str = "sys_event_v1"
    extracted_event_types: tuple[str, ...] = ("sys_event_v1",)
    principal_prefix: str = "vb"
    candidate_limit: int = SERVICE_MAX_LIMIT
    first_fetch_factor: int = 3
    ids_per_call: int = 100
    write_attempts: int = 4
    #: Seconds after which a write is surely searchable (the service documents ~15 s for
    #: extraction; direct adds are faster). Reconciliation of ambiguous writes waits this long.
    search_lag_bound: float = 60.0
    #: Ledger rows reconciled at the start of every put (bounded work per write).
    reconcile_per_write: int = 2

    def __post_init__(self) -> None:
        check_prefix(self.principal_prefix)
        if not 1 <= self.candidate_limit <= SERVICE_MAX_LIMIT:
            raise BackendMisconfigured(f"candidate_limit must be within 1..{SERVICE_MAX_LIMIT}", backend="viking")
        for tenant in self.collections:
            validate_id(tenant, "tenant_id")

    @property
    def search_types(self) -> list[str]:
        return list(dict.fromkeys((self.event_type, *self.extracted_event_types)))


@dataclass
class _Row:
    memory: StoredMemory
    viking_id: str
    score: float
    copies: list["_Row"] = field(default_factory=list)  # every stored copy of this memory


@dataclass
class _Task:
    collection: str
    scopes: list[ScopeKey]
    group_ids: list[str] | None = None


class VikingBackend:
    """`VikingBackend(client: VikingMemoryClient, config: VikingConfig, *, clock=time.time)`."""

    name = "viking"
    capabilities = Capabilities(
        server_side_extraction=True,
        memory_id_restriction=True,
        list_scopes=True,
        search_after_write_lag=True,
        supported_filters=frozenset({"start_time", "end_time"}),
        expiry_in_query=False,  # no expiry field in Viking's filter: dropped in `search` before a hit leaves
    )

    def __init__(
        self,
        client: VikingMemoryClient,
        config: VikingConfig,
        *,
        clock: Callable[[], float] = time.time,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """`state_dir`: where the write ledger lives (durable across restarts); None keeps it
        in memory, which makes retries idempotent within this process only."""
        self.client = client
        self.config = config
        self._clock = clock
        self._prefix = config.principal_prefix
        self._registered: set[ScopeKey] = set()
        self._captures: dict[str, tuple[str, Provenance]] = {}
        self._written: dict[str, set[str]] = defaultdict(set)  # collection -> principals written
        self.ledger = WriteLedger(state_dir)
        self.alarms = RecordAlarms(self.name)
        self._cursors = CursorCodec(self.ledger.secret("cursor-key"), backend=self.name)
        self._write_locks: dict[tuple[str, str, str], asyncio.Lock] = {}

    def __repr__(self) -> str:
        return f"VikingBackend(client={self.client!r}, prefix={self._prefix!r})"

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

    async def _rows_to_memories(self, collection: str, rows: Iterable[dict[str, Any]], pmap: PrincipalMap) -> list[_Row]:
        """Attribute each raw row to a scope or drop it. Never trusts anything but the principal
        table of this request plus the stored scope string, which must agree."""
        out: list[_Row] = []
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
                out.append(_Row(mem, vid, _score(row)))
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

    async def _extracted(self, collection: str, pending: list[tuple[dict[str, Any], ScopeKey]]) -> list[_Row]:
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
            for chunk in _chunks(sids, self.config.ids_per_call):
                rows = await self._search_rows(collection, [registry], query=None, limit=min(SERVICE_MAX_LIMIT, 2 * len(chunk) + 10), extra={"group_id": chunk})
                for r in rows:
                    env = _marker(r)
                    if env and env.get("marker") == "capture" and r.get("group_id") in chunk and r.get("user_id") in ([registry], registry):
                        try:
                            self._captures[r["group_id"]] = (env["scope"], prov_from_json(env["provenance"]))
                        except (KeyError, TypeError, ValueError):
                            continue
        out: list[_Row] = []
        for row, scope in pending:
            sid, vid, info = row.get("session_id"), str(row.get("id") or ""), row["memory_info"]
            capture = self._captures.get(sid) if isinstance(sid, str) else None
            content = info.get("summary")
            if capture is None or capture[0] != str(scope) or not isinstance(content, str) or row.get("memory_type") not in self.config.extracted_event_types:
                log.warning("viking guard: dropped an extracted row without a matching capture record")
                continue
            mid = "x" + vid
            if not _EXTRACTED_ID.match(mid):
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
            out.append(_Row(mem, vid, _score(row)))
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
    ) -> list[_Row]:
        """Over-fetch until `need` rows pass `keep` or the candidates are exhausted (or 5000)."""
        pmap = PrincipalMap(scopes, self._prefix)
        cap = self.config.candidate_limit
        fetch = min(cap, max(need * self.config.first_fetch_factor, 30))
        while True:
            rows = await self._search_rows(collection, pmap.principals, query=query, limit=fetch, extra=extra)
            got = await self._rows_to_memories(collection, rows, pmap)
            kept = _dedupe([r for r in got if keep(r.memory)])
            if len(kept) >= need or len(rows) < fetch or fetch >= cap:
                if len(rows) >= fetch >= cap and len(kept) < need:
                    log.info("viking search: candidate cap %d reached with %d of %d rows", cap, len(kept), need)
                return kept
            fetch = min(cap, fetch * 4)

    async def _by_id(self, scope: ScopeKey, memory_id: str) -> list[_Row]:
        collection = self.collection_for(scope)
        if _OUR_ID.match(memory_id):
            return await self._fetch_filtered(
                collection, [scope], query=None, need=1, keep=lambda m: m.id == memory_id, extra={"group_id": memory_id}
            )
        if _EXTRACTED_ID.match(memory_id):
            rows = await self._fetch_filtered(collection, [scope], query=None, need=SERVICE_MAX_LIMIT, keep=lambda m: m.id == memory_id)
            return rows
        return []

    # -- writes ---------------------------------------------------------------------------
    def _write_lock(self, collection: str, principal: str, group_id: str) -> asyncio.Lock:
        return self._write_locks.setdefault((collection, principal, group_id), asyncio.Lock())

    async def _idempotent_add(
        self,
        collection: str,
        *,
        user_id: str,
        group_id: str,
        info: Mapping[str, Any],
        exists: Callable[[], Awaitable[str | None]],
        assistant_id: str | None = None,
        time_ms: int | None = None,
    ) -> tuple[bool, Mapping[str, Any]]:
        """Add one event unless it is already there; (created by this call, memory_info stored).

        Looks up first (`exists` answers the viking id of a searchable copy), then asks the
        write ledger (an add acknowledged earlier but not yet searchable), then records the call
        in the ledger BEFORE sending it, so every attempt — here or in a caller's retry — sends
        the same record; an ambiguous failure is marked for `reconcile_writes`, which removes
        the extra copies once the search lag has passed (see `adapters.viking.ledger`)."""
        policy = self.client.retry
        attempts = max(1, self.config.write_attempts)
        self._written[collection].add(user_id)
        async with self._write_lock(collection, user_id, group_id):
            found = await exists()
            row = self.ledger.get(collection, user_id, group_id)
            if found is not None:
                if row is not None and row.event_id is None:
                    self.ledger.won(collection, user_id, group_id, found, self._clock())
                return False, info
            if row is not None and row.event_id is not None:
                return False, row.call["memory_info"]  # acknowledged earlier, not yet searchable
            if row is not None:  # an earlier call (or a process that died mid-call) never got an answer
                self.ledger.uncertain(collection, user_id, group_id, self._clock())
            call = {"memory_info": dict(info), "assistant_id": assistant_id, "time_ms": time_ms}
            call = self.ledger.begin(collection, user_id, group_id, call, self._clock()).call
            for attempt in range(1, attempts + 1):
                if attempt > 1:
                    found = await exists()
                    if found is not None:  # an earlier attempt of this call landed after all
                        self.ledger.won(collection, user_id, group_id, found, self._clock())
                        return True, call["memory_info"]
                try:
                    event_id = await self.client.event_add(
                        collection,
                        event_type=self.config.event_type,
                        memory_info=call["memory_info"],
                        user_id=user_id,
                        assistant_id=call["assistant_id"],
                        group_id=group_id,
                        time_ms=call["time_ms"],
                    )
                except RetryLater:
                    raise
                except Unavailable as exc:
                    if not certainly_not_applied(exc):
                        self.ledger.uncertain(collection, user_id, group_id, self._clock())
                    if attempt >= attempts:
                        raise
                    await policy.sleep(policy.wait_for(attempt, exc))
                    continue
                self.ledger.won(collection, user_id, group_id, event_id, self._clock())
                return True, call["memory_info"]
        raise AssertionError("unreachable")  # pragma: no cover

    async def reconcile_writes(self, *, limit: int = 100) -> int:
        """Remove the physical copies that ambiguous writes left behind; returns how many.

        Only ledger rows whose last ambiguity is older than `search_lag_bound` are looked at
        (every copy is searchable by then). For each: every event of the same principal with the
        same group id but the winner is deleted; with no acknowledged winner the lowest-id copy is
        adopted; with no copy at all the row is dropped (the write never landed)."""
        removed = 0
        for row in self.ledger.due(self._clock() - self.config.search_lag_bound, limit):
            async with self._write_lock(row.collection, row.principal, row.group_id):  # not while a put of it runs
                current = self.ledger.get(row.collection, row.principal, row.group_id)
                if current is not None and current.touched_at <= self._clock() - self.config.search_lag_bound:
                    removed += await self._reconcile(current)
        return removed

    async def _reconcile(self, row: LedgerRow) -> int:
        rows = await self.client.search(
            row.collection,
            filter={"user_id": [row.principal], "group_id": [row.group_id], "memory_type": self.config.search_types},
            query=None,
            limit=SERVICE_MAX_LIMIT,
            kind="event",
        )
        copies = sorted(
            str(r["id"])
            for r in rows
            if isinstance(r.get("id"), str) and r.get("group_id") == row.group_id and r.get("user_id") in ([row.principal], row.principal)
        )
        if not copies:
            if row.event_id is not None:  # acknowledged, yet gone after the lag: deleted elsewhere (or the bound is too short)
                log.warning("viking ledger: an acknowledged write is not searchable %.0fs later; forgetting its ledger row", self.config.search_lag_bound)
            self.ledger.forget(row.collection, row.principal, row.group_id)
            return 0
        # The acknowledged copy wins; without one, the copy with the lowest id is adopted (every copy holds the same record). When the winner is
        # not among the copies (deleted elsewhere, or still lagging) every other copy goes too: it
        # is either a duplicate of the winner or a leftover of a memory that was forgotten.
        winner = row.event_id if row.event_id is not None else copies[0]
        removed = 0
        for event_id in copies:
            if event_id == winner:
                continue
            try:
                await self.client.event_delete(row.collection, event_id)
            except NotFound:
                pass
            removed += 1
        self.ledger.settle(row.collection, row.principal, row.group_id, winner)
        return removed

    async def _register(self, scope: ScopeKey, collection: str, *, marker: str = "scope", group_id: str | None = None, extra: Mapping[str, Any] | None = None) -> None:
        registry = self._registry_of(scope)
        gid = group_id or scope_marker_id(scope)
        envelope = {"v": 1, "marker": marker, "scope": str(scope), **(extra or {})}
        info = {"summary": f"viking-bridge {marker} record", RECORD_FIELD: json.dumps(envelope, ensure_ascii=False, sort_keys=True)}

        async def exists() -> str | None:
            rows = await self._search_rows(collection, [registry], query=None, limit=10, extra={"group_id": gid})
            found = [r for r in rows if (_marker(r) or {}).get("scope") == str(scope) and isinstance(r.get("id"), str)]
            return found[0]["id"] if found else None

        await self._idempotent_add(collection, user_id=registry, group_id=gid, info=info, exists=exists)

    async def _ensure_registered(self, scope: ScopeKey, collection: str) -> None:
        if scope in self._registered:
            return
        await self._register(scope, collection)
        self._registered.add(scope)

    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        """Store `memory`; the same key in the same scope returns the first record (`created`
        False), also while that record is not yet searchable (the write ledger knows it)."""
        scope = require_scope(scope)
        if not isinstance(memory, NewMemory):
            raise InvalidRequest("put needs a NewMemory", backend=self.name, scope=scope)
        if not isinstance(idempotency_key, str) or not idempotency_key:
            raise InvalidRequest("idempotency_key must be a non-empty string", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        await self._reconcile_some()
        await self._ensure_registered(scope, collection)
        stored, info = encode_new(memory_id, scope, memory, now=self._clock())
        first: list[StoredMemory] = []

        async def exists() -> str | None:
            rows = await self._by_id(scope, memory_id)
            if rows:
                first.append(rows[0].memory)
                return rows[0].viking_id
            return None

        created, sent = await self._idempotent_add(
            collection,
            user_id=self.principal(scope),
            group_id=memory_id,
            info=info,
            exists=exists,
            assistant_id=self._assistant_for(scope, None),
            time_ms=int(stored.created_at * 1000),
        )
        if first and not created:
            return replace(first[-1], created=False)
        if sent is not info:
            try:
                stored = decode_record(sent, scope, memory_id)  # the record the first attempt sent
            except CorruptRecord as exc:
                self.alarms.raise_alarm(scope, f"write ledger: {exc}")
        return replace(stored, created=created)

    async def _reconcile_some(self) -> None:
        """Bounded reconciliation on the write path; a failure here never fails the write."""
        if self.config.reconcile_per_write <= 0:
            return
        try:
            await self.reconcile_writes(limit=self.config.reconcile_per_write)
        except BackendError as exc:
            log.warning("viking ledger: reconciliation postponed (%s)", type(exc).__name__)

    async def find_by_idempotency_key(self, scope: ScopeKey, idempotency_key: str) -> StoredMemory | None:
        """The memory a put with this key stored in `scope`, or None. A write acknowledged but
        not yet searchable is found through the write ledger. Under search lag a write whose
        answer was lost may read None until it becomes searchable (reconcile_writes settles it)."""
        scope = require_scope(scope)
        collection = self.collection_for(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        rows = await self._by_id(scope, memory_id)
        if rows:
            return rows[0].memory
        row = self.ledger.get(collection, self.principal(scope), memory_id)
        if row is None or row.event_id is None:
            return None
        try:
            return decode_record(row.call["memory_info"], scope, memory_id)
        except CorruptRecord as exc:
            self.alarms.raise_alarm(scope, f"write ledger: {exc}")
            return None

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        scope = require_scope(scope)
        rows = await self._by_id(scope, memory_id) if isinstance(memory_id, str) else []
        if not rows:
            raise NotFound(f"no memory {memory_id!r} in this scope", backend=self.name, scope=scope)
        return rows[0].memory

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        scope = require_scope(scope)
        if patch.confidence is not None and not 0.0 <= patch.confidence <= 1.0:
            raise InvalidRequest("confidence must be within [0, 1]", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        rows = await self._by_id(scope, memory_id) if isinstance(memory_id, str) else []
        if not rows:
            raise NotFound(f"no memory {memory_id!r} in this scope", backend=self.name, scope=scope)
        updated = patch.apply(rows[0].memory, now=self._clock())
        info = encode_record(updated)
        for row in _all_copies(rows):
            await self.client.event_update(collection, row.viking_id, info)
        return updated

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        scope = require_scope(scope)
        collection = self.collection_for(scope)
        if not isinstance(memory_id, str):
            return False
        if _OUR_ID.match(memory_id):
            rows = await self._by_id(scope, memory_id)
            # Scoped by principal AND our id: removes every copy, never another scope's rows.
            data = await self.client.event_batch_delete(
                collection, {"user_id": self.principal(scope), "group_id": memory_id, "event_type": self.config.event_type}
            )
            count = data.get("deleted_count")
            self.ledger.forget(collection, self.principal(scope), memory_id)  # a later put with the key writes anew
            return bool(rows) or (isinstance(count, int) and count > 0)
        if _EXTRACTED_ID.match(memory_id):
            rows = await self._by_id(scope, memory_id)
            for row in rows:
                try:
                    await self.client.event_delete(collection, row.viking_id)
                except NotFound:
                    pass
            return bool(rows)
        return False

    async def capture(
        self, scope: ScopeKey, messages: Sequence[ConversationMessage], *, session_key: str, provenance: Provenance
    ) -> CaptureReceipt:
        """session/add into `scope`'s principal. Reusing the same (scope, session_key) overwrites
        that session's extracted events — the intended replay semantics; nobody else's."""
        scope = require_scope(scope)
        if not messages:
            raise InvalidRequest("capture needs at least one message", backend=self.name, scope=scope)
        if len(messages) > MAX_MESSAGES:
            raise InvalidRequest(f"a capture holds at most {MAX_MESSAGES} messages, got {len(messages)}", backend=self.name, scope=scope)
        if not isinstance(session_key, str) or not session_key:
            raise InvalidRequest("session_key must be a non-empty string", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        sid = backend_session_id(scope, session_key, self._prefix)
        await self._ensure_registered(scope, collection)
        await self._register(scope, collection, marker="capture", group_id=sid, extra={"provenance": provenance.to_dict()})
        self._captures[sid] = (str(scope), provenance)
        now_ms = int(self._clock() * 1000)
        payload = []
        for m in messages:
            if m.role not in ("user", "assistant", "system"):
                raise InvalidRequest(f"message role must be user|assistant|system, got {m.role!r}", backend=self.name, scope=scope)
            payload.append({"role": m.role, "content": m.content, "time": int(m.time * 1000) if m.time is not None else now_ms})
        principal = self.principal(scope)
        metadata: dict[str, Any] = {"default_user_id": principal, "time": now_ms}
        assistant = self._assistant_for(scope, provenance.author_agent_id)
        if assistant:
            metadata["default_assistant_id"] = assistant
        self._written[collection].add(principal)
        data = await self.client.session_add(collection, sid, payload, metadata)
        return CaptureReceipt(backend_session_id=sid, accepted_messages=len(payload), task_id=data.get("task_id"))

    # -- reads ----------------------------------------------------------------------------
    def _pushdown(self, filters: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in filters.items():
            if key not in self.capabilities.supported_filters:
                raise UnsupportedFilter(f"filter {key!r} is not supported (supported: start_time, end_time)", backend=self.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UnsupportedFilter(f"filter {key!r} must be epoch seconds", backend=self.name)
            out[key] = int(value * 1000)
        return out

    def _plan(self, scopes: ScopeSet) -> list[_Task]:
        by_coll: dict[str, list[ScopeKey]] = defaultdict(list)
        restricted: dict[str, list[ScopeKey]] = defaultdict(list)
        for entry in scopes:
            coll = self.collection_for(entry.key)
            ids = entry.memory_ids
            if ids is not None and all(_OUR_ID.match(i) for i in ids):
                restricted[coll].append(entry.key)
            else:
                by_coll[coll].append(entry.key)
        tasks: list[_Task] = []
        for coll, keys in by_coll.items():
            for chunk in _chunks(keys, self.config.ids_per_call):
                tasks.append(_Task(coll, chunk))
        for coll, keys in restricted.items():
            for chunk in _chunks(keys, self.config.ids_per_call):
                ids = sorted({i for k in chunk for i in (scopes.entry(k).memory_ids or ())})
                for id_chunk in _chunks(ids, self.config.ids_per_call):
                    tasks.append(_Task(coll, chunk, id_chunk))
        return tasks

    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest("search takes a SearchQuery", backend=self.name)
        scopes = require_scope_set(query.scopes)
        extra = self._pushdown(query.filters)
        tasks = self._plan(scopes)
        text = query.text.strip() or None
        if text is not None and len(text) > 4000:
            raise InvalidRequest("query text is longer than the service's 4000 characters", backend=self.name)

        now = query.at()

        def keep(m: StoredMemory) -> bool:
            # expiry travels in the record envelope: Viking's search filter has no field for it
            # (only user/assistant/group/session ids, memory_type and a start/end on event time),
            # so, like status and kind, it is applied to the over-fetched candidates here
            return scopes.permits(m.scope, m.id) and m.status in query.statuses and (query.kinds is None or m.kind in query.kinds) and not m.expired(now)

        async def run(task: _Task) -> list[_Row]:
            flt = dict(extra)
            if task.group_ids is not None:
                flt["group_id"] = task.group_ids
            return await self._fetch_filtered(task.collection, task.scopes, query=text, need=query.limit, keep=keep, extra=flt)

        results = await asyncio.gather(*(run(t) for t in tasks), return_exceptions=True)
        rows: list[_Row] = []
        failed: list[ScopeKey] = []
        reasons: list[str] = []
        for task, res in zip(tasks, results):
            if isinstance(res, BaseException):
                if not isinstance(res, Exception):
                    raise res  # cancellation, interpreter exit: not a backend failure
                # Every failure of a backend call is a failed scope, never an exception: one
                # failing scope and all of them read the same (finding 20); the bridge raises
                # RecallIncomplete with these reasons.
                reason = self._failure_reason(res)
                for key in task.scopes:
                    if key not in failed:
                        failed.append(key)
                        reasons.append(f"{key}: {reason}")
            else:
                rows.extend(res)
        merged = _dedupe(rows)
        merged.sort(key=lambda r: (-r.score, -r.memory.created_at, r.memory.id))
        hits = tuple(Hit(memory=r.memory, scope=r.memory.scope, score=r.score) for r in merged[: query.limit])
        return SearchResult(hits=hits, failed_scopes=tuple(failed), failure_reasons=tuple(reasons))

    def _failure_reason(self, exc: Exception) -> str:
        """`Type: message` of a failed call, without secrets (the client's redaction)."""
        if isinstance(exc, BackendError):
            text = f"{type(exc).__name__}: {exc}"
        else:  # a bug or an unexpected answer: the type only, the details stay in the log
            log.error("viking search of one task failed unexpectedly", exc_info=exc)
            text = f"{type(exc).__name__} (unexpected; see the adapter log)"
        return self.client.scrub(text)[:500]

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        scope = require_scope(scope)
        if not isinstance(limit, int) or limit < 1:
            raise InvalidRequest("limit must be a positive integer", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        rows = await self._fetch_filtered(
            collection, [scope], query=None, need=limit, keep=lambda m: statuses is None or m.status in statuses
        )
        mems = [r.memory for r in rows]
        mems.sort(key=lambda m: (-m.created_at, m.id))
        return mems[:limit]

    async def list_page(
        self, scope: ScopeKey, *, cursor: str | None = None, limit: int = 500, statuses: frozenset[Status] | None = None
    ) -> ListPage:
        """One page of the scope's memories, newest first; pass `next_cursor` back for the next.

        The service has no cursor and answers at most 5000 rows per search, so a page is a
        query-less search (newest first) below the cursor's time (`end_time`, inclusive), skipping
        the rows already passed at exactly that millisecond. A scope of any size is walked.
        The cursor is signed and bound to `scope` (`adapters.shared.cursor`): another scope's or an edited
        one is `InvalidRequest`. Only searchable rows are seen (writes appear after the lag)."""
        scope = require_scope(scope)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidRequest("limit must be a positive integer", backend=self.name, scope=scope)
        state = self._cursors.open(scope, cursor) if cursor is not None else {}
        boundary = state.get("t")
        passed_rows = set(state.get("r") or ())
        passed_ids = set(state.get("m") or ())
        if (boundary is not None and (isinstance(boundary, bool) or not isinstance(boundary, int))) or not all(
            isinstance(x, str) for x in (*passed_rows, *passed_ids)
        ):
            raise InvalidRequest("malformed cursor", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        pmap = PrincipalMap([scope], self._prefix)
        out: list[StoredMemory] = []
        fetch = min(SERVICE_MAX_LIMIT, limit + len(passed_rows) + 1)
        while True:
            extra = {"end_time": boundary} if boundary is not None else None
            rows = await self._search_rows(collection, pmap.principals, query=None, limit=fetch, extra=extra)
            exhausted = len(rows) < fetch
            fresh = [r for r in rows if not (_row_time(r) == boundary and str(r.get("id")) in passed_rows)]
            if not fresh:
                if exhausted:
                    return ListPage(tuple(out), None)
                if fetch >= SERVICE_MAX_LIMIT:
                    raise Unavailable(f"cannot page past {SERVICE_MAX_LIMIT} records sharing one millisecond", backend=self.name, scope=scope)
                fetch = min(SERVICE_MAX_LIMIT, fetch * 4)
                continue
            memories = {r.viking_id: r.memory for r in await self._rows_to_memories(collection, fresh, pmap)}
            for row in fresh:
                t = _row_time(row)
                if t != boundary:
                    boundary, passed_rows, passed_ids = t, set(), set()
                vid = str(row.get("id"))
                passed_rows.add(vid)
                mem = memories.get(vid)
                if mem is None or mem.id in passed_ids or (statuses is not None and mem.status not in statuses):
                    continue
                passed_ids.add(mem.id)
                out.append(mem)
                if len(out) >= limit:
                    return ListPage(tuple(out), self._cursors.mint(scope, {"t": boundary, "r": sorted(passed_rows), "m": sorted(passed_ids)}))
            if exhausted:
                return ListPage(tuple(out), None)
            fetch = min(SERVICE_MAX_LIMIT, max(fetch, limit - len(out) + len(passed_rows) + 1))

    async def _registry_markers(self, tenant_id: str) -> tuple[str, list[tuple[dict[str, Any], dict[str, Any], ScopeKey]]]:
        """The tenant's registry rows (scope markers, capture records) as (row, envelope, scope),
        keeping only rows of the registry principal whose scope parses into this tenant."""
        validate_id(tenant_id, "tenant_id")
        tenant_scope = ScopeKey.tenant(tenant_id)
        collection = self.collection_for(tenant_scope)
        registry = self._registry_of(tenant_scope)
        rows = await self.client.search(
            collection, filter={"user_id": [registry], "memory_type": self.config.search_types}, query=None, limit=SERVICE_MAX_LIMIT, kind="event"
        )
        out = []
        for r in rows:
            env = _marker(r)
            if not env or r.get("user_id") not in ([registry], registry):
                continue
            try:
                key = ScopeKey.parse(str(env.get("scope", "")))
            except (ValueError, TypeError):
                continue
            if key.tenant_id == tenant_id and key.visibility is not Visibility.GLOBAL:
                out.append((r, env, key))
        return collection, out

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        collection, markers = await self._registry_markers(tenant_id)
        candidates = {key for _, env, key in markers if env.get("marker") == "scope"}
        present: set[ScopeKey] = set()
        for chunk in _chunks(sorted(candidates), self.config.ids_per_call):
            remaining = list(chunk)
            while remaining:
                pmap = PrincipalMap(remaining, self._prefix)
                found = await self._search_rows(collection, pmap.principals, query=None, limit=SERVICE_MAX_LIMIT)
                seen = {s for r in found if (s := self._scope_of_row(r, pmap)) is not None}
                present |= seen
                if len(found) < SERVICE_MAX_LIMIT or not seen:
                    break
                remaining = [k for k in remaining if k not in seen]
        return sorted(present, key=str)

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Erasure: drop the registry rows naming the subject — capture records it authored (they
        hold its session id) and the scope markers of its private and agent scopes. The raw
        conversations the service keeps for session/add cannot be deleted through the API."""
        validate_id(subject_user_id, "subject_user_id")
        collection, markers = await self._registry_markers(tenant_id)
        erased = 0
        for r, env, key in markers:
            if not isinstance(r.get("id"), str):
                continue
            owned = key.personal_user_id == subject_user_id  # private, agent-owned and task scopes
            authored = env.get("marker") == "capture" and (env.get("provenance") or {}).get("author_user_id") == subject_user_id
            if owned or authored:
                try:
                    await self.client.event_delete(collection, r["id"])
                except NotFound:
                    pass
                erased += 1
                if isinstance(r.get("group_id"), str):
                    self.ledger.forget(collection, self._registry_of(key), r["group_id"])
                self._registered.discard(key)
                if env.get("marker") == "capture":
                    self._captures.pop(str(r.get("group_id")), None)
        return erased

    # -- lifecycle ------------------------------------------------------------------------
    async def drop_namespace(self) -> None:
        """Delete every row this backend instance wrote (live contract runs use a unique prefix)."""
        for collection, principals in list(self._written.items()):
            for principal in sorted(principals):
                try:
                    await self.client.event_batch_delete(collection, {"user_id": principal})
                    self.ledger.forget(collection, principal)
                except BackendError as exc:
                    log.warning("viking cleanup of one principal failed: %s", type(exc).__name__)
        self._written.clear()
        self._registered.clear()

    async def aclose(self) -> None:
        try:
            await self.client.aclose()
        finally:
            self.ledger.close()


# -- helpers ---------------------------------------------------------------------------------
def _score(row: Mapping[str, Any]) -> float:
    s = row.get("score")
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        return 0.0
    return max(0.0, min(1.0, float(s)))


def _row_time(row: Mapping[str, Any]) -> int:
    t = row.get("time")
    return int(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0


def _marker(row: Mapping[str, Any]) -> dict[str, Any] | None:
    info = row.get("memory_info")
    if not isinstance(info, dict) or not isinstance(info.get(RECORD_FIELD), str):
        return None
    try:
        env = json.loads(info[RECORD_FIELD])
    except ValueError:
        return None
    return env if isinstance(env, dict) and env.get("marker") else None


def _dedupe(rows: list[_Row]) -> list[_Row]:
    """One row per (scope, memory id), the best-scored; copies from retried writes collapse."""
    best: dict[tuple[ScopeKey, str], _Row] = {}
    copies: dict[tuple[ScopeKey, str], list[_Row]] = defaultdict(list)
    for r in rows:
        key = (r.memory.scope, r.memory.id)
        copies[key].append(r)
        if key not in best or r.score > best[key].score:
            best[key] = r
    return [_Row(r.memory, r.viking_id, r.score, [c for c in copies[key] for c in (c.copies or [c])]) for key, r in best.items()]


def _all_copies(rows: list[_Row]) -> list[_Row]:
    out: list[_Row] = []
    for r in rows:
        out.extend(r.copies or [r])
    return out


def _chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    size = max(1, size)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]
