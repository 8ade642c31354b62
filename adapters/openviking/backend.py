"""`OpenVikingBackend`: the MemoryBackend protocol on an OpenViking 0.5.2 server.

Never decides who may see what. It executes exactly the ScopeSet it is handed: one `find` per
scope entry, each restricted (target_uri) to that scope's own directory and — in api_key mode —
sent with that scope principal's OWN user key, so the server's per-user isolation backs every
query; then every hit is mapped back to a ScopeKey from its URI and checked against the ScopeSet
(and the entry's memory_ids) before it leaves. Anything whose scope cannot be established is
dropped. A scope whose call fails lands in `SearchResult.failed_scopes`; it is never silently
missing. Status and kind travel as search tags (`vbs=`, `vbk=`), so the server filters before it
ranks. Memories the server extracted from a `capture` surface only in the captured private scope,
through the capture record and the session's memory diff (see `adapters.openviking.extraction`).

Expiry — an honest shortfall. OpenViking 0.5.2's `find` filters by target URI, tags (equality,
one value per key), `since`/`until` on the file's created/updated time and `level`; none can say
"expires_at > now" (a tag can only name a fixed value, and `since`/`until` judge another time).
So `expires_at` travels in the record envelope and expired records are dropped in `_hits_from`
before a hit leaves, the find loop over-fetching to fill `limit`
(`Capabilities.expiry_in_query=False`); the bridge's guard drops any that still arrive, counted.

Two modes (see docs/openviking.md):
- `api_key` (recommended): the root key only provisions accounts/users; each principal's user
  key lives in a `KeyStore`.
- `trusted`: every call carries the root key plus identity headers; the bridge is the only
  boundary, the root key a master credential.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import re
import time
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal, Sequence

import httpx

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
)
from adapters.shared.cursor import CursorCodec
from adapters.shared.envelope import RecordAlarms, memory_id_for
from adapters.errors import BackendError, CorruptRecord, EmptyScopeError, InvalidRequest, NotFound, UnsupportedFilter
from adapters.shared.http import redact
from adapters.openviking.client import Auth, OpenVikingClient, RetryPolicy, SecretKey
from adapters.openviking.errors import OVConflict, OVNotFound, OVUnauthenticated
from adapters.openviking.extraction import (
    CAPTURE_DIR,
    EXTRACTED_KINDS,
    CaptureRecord,
    ExtractionIndex,
    decode_capture,
    encode_capture,
    extracted_id,
    stored_from_extracted,
)
from adapters.openviking.keystore import FileKeyStore, KeyStore, MemoryKeyStore
from adapters.openviking.mapping import (
    ADMIN_USER,
    Principal,
    ScopeMapper,
    check_memory_id,
)
from adapters.openviking.record import HEADER_PREFIX, decode_record, encode_record
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet, Visibility

__all__ = ["OpenVikingBackend", "Mode"]

log = logging.getLogger("adapters.openviking")

Mode = Literal["api_key", "trusted"]
_SESSION_ID = re.compile(r"^vb-[0-9a-f]{40}\Z")
_ARCHIVE = re.compile(r"^archive_[0-9]{1,9}\Z")


def status_tag(status: Status) -> str:
    """The server-side search tag of a record's status (OpenViking tags are lowercased k=v)."""
    return f"vbs={status.value}"


def kind_tag(kind: str) -> str:
    """Kinds are free strings; the tag holds a hash so case and '=' can never collide."""
    return "vbk=" + hashlib.sha256(kind.encode()).hexdigest()[:24]


def record_tags(memory: StoredMemory) -> list[str]:
    return [status_tag(memory.status), kind_tag(memory.kind)]


class OpenVikingBackend:
    """An OpenViking server behind the bridge. Build with `OpenVikingBackend.connect(...)`."""

    def __init__(
        self,
        client: OpenVikingClient,
        *,
        root_key: SecretKey | str,
        mode: Mode = "api_key",
        key_store: KeyStore | None = None,
        namespace: str = "vb",
        overfetch: int = 3,
        max_fetch: int = 512,
        name: str | None = None,
        read_concurrency: int = 8,
        capture_deadline: float = 120.0,
        tag_filtering: bool = True,
        max_tag_calls: int = 8,
        extraction_refresh: float = 2.0,
        cursor_key: bytes | None = None,
    ) -> None:
        if mode not in ("api_key", "trusted"):
            raise InvalidRequest(f"mode must be 'api_key' or 'trusted', not {mode!r}")
        self._client = client
        self._root = Auth(root_key if isinstance(root_key, SecretKey) else SecretKey(root_key))
        self.mode: Mode = mode
        self.name = name or ("openviking" if mode == "api_key" else "openviking-trusted")
        self._keys: KeyStore = key_store if key_store is not None else MemoryKeyStore()
        self.mapper = ScopeMapper(namespace)
        self._overfetch = max(1, overfetch)
        self._max_fetch = max_fetch
        self._read_slots = asyncio.Semaphore(read_concurrency)
        self._capture_deadline = capture_deadline
        self._accounts: set[str] = set()
        self._users: set[tuple[str, str]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._tag_filtering = tag_filtering
        self._max_tag_calls = max(1, max_tag_calls)
        self._extraction_refresh = extraction_refresh
        self._extracted: dict[str, ExtractionIndex] = {}
        self._extracted_checked: dict[str, float] = {}
        self.capabilities = Capabilities(
            server_side_extraction=True,  # capture() -> session commit; extracted files surface as private-scope hits
            memory_id_restriction=True,  # pushed into find as a list of exact target URIs
            list_scopes=True,
            search_after_write_lag=False,  # writes use wait=true: searchable when put returns
            supported_filters=frozenset(),
            expiry_in_query=False,  # find has no filter on a record field: expired records are dropped in _hits_from
        )
        self.alarms = RecordAlarms(self.name)
        self._ls_window = 1000  # fs/ls entries per call (0.5.2's node_limit default and our cap)
        self._cursors = CursorCodec(cursor_key, backend=self.name)

    @classmethod
    def connect(
        cls,
        url: str,
        root_api_key: str | SecretKey,
        *,
        mode: Mode = "api_key",
        key_store_path: str | None = None,
        key_store_encryption_key: bytes | str | None = None,
        namespace: str = "vb",
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        **kw: Any,
    ) -> "OpenVikingBackend":
        store: KeyStore | None = None
        if mode == "api_key":
            store = FileKeyStore(key_store_path, encryption_key=key_store_encryption_key) if key_store_path else MemoryKeyStore()
        client = OpenVikingClient(url, http_client=http_client, transport=transport, retry=retry, timeout=httpx.Timeout(timeout, connect=5.0))
        return cls(client, root_key=root_api_key, mode=mode, key_store=store, namespace=namespace, **kw)

    def __repr__(self) -> str:
        return f"OpenVikingBackend({self._client.base_url!r}, mode={self.mode!r}, namespace={self.mapper.namespace!r})"

    @property
    def client(self) -> OpenVikingClient:
        return self._client

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- principals and credentials -------------------------------------------------------
    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def _ensure_account(self, account: str) -> None:
        if account in self._accounts:
            return
        async with self._lock("account:" + account):
            if account in self._accounts:
                return
            try:
                await self._client.create_account(self._root, account, ADMIN_USER)  # the admin key is discarded
            except OVConflict:
                pass
            self._accounts.add(account)

    async def _ensure_user(self, p: Principal) -> SecretKey | None:
        """Create the principal's user if needed; in api_key mode return (and store) its key."""
        await self._ensure_account(p.account)
        async with self._lock(f"user:{p.account}/{p.user}"):
            if self.mode == "api_key":
                key = await self._keys.get(p.account, p.user)
                if key is not None:
                    return key
            elif (p.account, p.user) in self._users:
                return None
            try:
                result = await self._client.create_user(self._root, p.account, p.user, "user")
            except OVConflict:
                result = await self._client.regenerate_key(self._root, p.account, p.user) if self.mode == "api_key" else {}
            self._users.add((p.account, p.user))
            if self.mode == "api_key":
                key = SecretKey(result["user_key"])
                await self._keys.put(p.account, p.user, key)
                return key
            return None

    async def _existing_key(self, p: Principal) -> SecretKey | None:
        """api_key mode, read path: the stored key, or a regenerated one if the user exists; None if not."""
        key = await self._keys.get(p.account, p.user)
        if key is not None:
            return key
        try:
            users = await self._client.list_users(self._root, p.account)
        except OVNotFound:
            return None
        if not any(u.get("user_id") == p.user for u in users):
            return None
        return await self._ensure_user(p)

    async def _auth(self, p: Principal, *, create: bool) -> Auth | None:
        if self.mode == "trusted":
            if create:
                await self._ensure_user(p)
            return Auth(self._root.key, p.account, p.user, p.peer)
        key = await (self._ensure_user(p) if create else self._existing_key(p))
        return None if key is None else Auth(key, actor_peer=p.peer)

    async def _call(self, p: Principal, create: bool, fn: Any) -> Any:
        """Run `fn(auth)`; on a rejected stored key (rotated elsewhere), re-provision once."""
        auth = await self._auth(p, create=create)
        if auth is None:
            raise OVNotFound("principal not provisioned", backend=self.name, scope=p.scope)
        try:
            return await fn(auth)
        except OVUnauthenticated:
            if self.mode != "api_key":
                raise
            if isinstance(self._keys, FileKeyStore):
                await self._keys.reload()
            fresh = await self._keys.get(p.account, p.user)
            if fresh is None or fresh == auth.key:
                result = await self._client.regenerate_key(self._root, p.account, p.user)
                fresh = SecretKey(result["user_key"])
                await self._keys.put(p.account, p.user, fresh)
            return await fn(Auth(fresh, actor_peer=p.peer))

    # -- records ------------------------------------------------------------------------------
    async def _read_record(self, p: Principal, memory_id: str, *, create: bool = False) -> StoredMemory:
        uri = p.memory_uri(memory_id)
        try:
            text = await self._call(p, create, lambda auth: self._client.read(auth, uri))
        except OVNotFound:
            raise NotFound(f"no memory {memory_id}", backend=self.name, scope=p.scope) from None
        try:
            return decode_record(text, expected_scope=p.scope, expected_id=memory_id)
        except CorruptRecord as exc:
            self.alarms.raise_alarm(p.scope, f"{memory_id}: {exc}")  # dropped, never returned
            raise NotFound(f"memory {memory_id} is not a valid record here ({exc})", backend=self.name, scope=p.scope) from None

    async def _write_record(self, p: Principal, memory: StoredMemory) -> None:
        uri = p.memory_uri(memory.id)
        body = encode_record(memory)
        tags = record_tags(memory)
        await self._call(p, True, lambda auth: self._client.write(auth, uri, body, mode="replace", wait=True, tags=tags))

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
            except NotFound:
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
        except NotFound:
            return None

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        try:
            check_memory_id(memory_id)
        except InvalidRequest:
            raise NotFound(f"no memory {str(memory_id)[:40]!r}", backend=self.name, scope=scope) from None
        try:
            return await self._read_record(p, memory_id)
        except NotFound:
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
            except NotFound:
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
        except NotFound:
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
            except NotFound:
                return None

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        account = self.mapper.account_for_tenant(tenant_id)
        try:
            users = await self._client.list_users(self._root, account)
        except OVNotFound:
            return []
        found: set[ScopeKey] = set()
        for user in users:
            name = user.get("user_id")
            if not isinstance(name, str) or name == ADMIN_USER:
                continue
            found.update(await self._scopes_of_user(account, name, tenant_id))
        return sorted(found, key=str)

    async def _scopes_of_user(self, account: str, user: str, tenant_id: str) -> list[ScopeKey]:
        """Scopes with memories under one user: read one record per directory, then re-map it
        and keep it only if it maps back to exactly this account/user(/peer)."""
        probe = Principal(ScopeKey.tenant(tenant_id), account, user)
        auth = await (self._auth_for_listing(probe))
        if auth is None:
            return []
        dirs = [(probe.memory_dir, None)]
        try:
            peers = await self._client.ls(auth, f"{probe.user_root}/peers")
            dirs += [(f"{e['uri']}/memories/vb", e["uri"].rsplit("/", 1)[-1]) for e in peers if e.get("isDir")]
        except OVNotFound:
            pass
        out: list[ScopeKey] = []
        for directory, peer in dirs:
            try:
                files = await self._client.ls(auth.with_peer(peer), directory)
            except (OVNotFound, BackendError):
                continue
            for entry in files:
                uri = entry.get("uri", "")
                if entry.get("isDir") or not uri.endswith(".md"):
                    continue
                try:
                    text = await self._client.read(auth.with_peer(peer), uri)
                    first = text.partition("\n")[0]
                    scope = ScopeKey.parse(json.loads(first[len(HEADER_PREFIX):-3])["scope"])
                    p = self.mapper.principal(scope)
                except Exception:
                    continue
                if (p.account, p.user, p.peer) == (account, user, peer) and p.memory_id_of(uri):
                    out.append(scope)
                    break
        return out

    async def _auth_for_listing(self, probe: Principal) -> Auth | None:
        if self.mode == "trusted":
            return Auth(self._root.key, probe.account, probe.user)
        key = await self._existing_key(probe)
        return None if key is None else Auth(key)

    # -- search -------------------------------------------------------------------------------
    async def search(self, query: SearchQuery) -> SearchResult:
        if not isinstance(query, SearchQuery):
            raise InvalidRequest("search needs a SearchQuery")
        if not isinstance(query.scopes, ScopeSet) or len(query.scopes) == 0:
            raise EmptyScopeError("search needs a non-empty ScopeSet", backend=self.name)
        unknown = set(query.filters) - self.capabilities.supported_filters
        if unknown:
            raise UnsupportedFilter(f"filters {sorted(unknown)} are not supported", backend=self.name)
        principals = [(entry, self.mapper.principal(entry.key)) for entry in query.scopes]  # InvalidRequest escapes
        outcomes = await asyncio.gather(*(self._search_entry(e, p, query) for e, p in principals), return_exceptions=True)
        hits: list[Hit] = []
        failed: list[ScopeKey] = []
        reasons: list[str] = []
        for (entry, _), outcome in zip(principals, outcomes):
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome  # cancellation, interpreter exit: not a backend failure
                # Every failure of a scope's calls is a failed scope, never an exception (the
                # same contract as every adapter: the bridge raises RecallIncomplete with these).
                failed.append(entry.key)
                reasons.append(f"{entry.key}: {self._failure_reason(outcome)}")
                continue
            hits.extend(outcome)
        # second wall: every hit's scope must be in the set and permitted for that memory id
        hits = [h for h in hits if h.scope == h.memory.scope and query.scopes.permits(h.scope, h.memory.id)]
        hits.sort(key=lambda h: (-h.score, str(h.scope), h.memory.id))
        return SearchResult(hits=tuple(hits[: query.limit]), failed_scopes=tuple(failed), failure_reasons=tuple(reasons))

    def _failure_reason(self, exc: Exception) -> str:
        """`Type: message` of a failed scope, without secrets (the shared redaction)."""
        if isinstance(exc, BackendError):
            text = f"{type(exc).__name__}: {exc}"
        else:
            log.error("openviking search of one scope failed unexpectedly", exc_info=exc)
            text = f"{type(exc).__name__} (unexpected; see the adapter log)"
        return redact(text, [self._root.key.reveal()])[:500]

    async def _search_entry(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        auth = await self._auth(p, create=False)
        if auth is None:
            return []  # nothing was ever stored for this principal
        records, extracted = await asyncio.gather(self._search_records(entry, p, query), self._search_extracted(entry, p, query))
        hits = records + extracted
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        return hits[: query.limit]

    def _tag_plans(self, query: SearchQuery) -> list[list[str] | None]:
        """The server-side tag filters that together cover exactly (statuses x kinds).

        OpenViking 0.5.2 ANDs tags and keeps ONE value per key, so each (status, kind) pair is one
        `find`; the pairs are disjoint, so the union of each call's top-`limit` holds the top-`limit`.
        [None] = no tags (every status and kind wanted, or too many pairs: filter client-side)."""
        statuses = sorted(query.statuses, key=lambda st: st.value)
        kinds: list[str | None] = sorted(query.kinds) if query.kinds is not None else [None]
        if not self._tag_filtering or (len(statuses) == len(Status) and query.kinds is None):
            return [None]
        if len(statuses) * len(kinds) > self._max_tag_calls:
            return [None]
        plans: list[list[str] | None] = []
        for status, kind in itertools.product(statuses, kinds):
            plans.append([status_tag(status)] + ([kind_tag(kind)] if kind is not None else []))
        return plans

    async def _search_records(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        if entry.memory_ids is not None:
            ids = sorted(m for m in entry.memory_ids if isinstance(m, str) and p.memory_id_of(f"{p.memory_dir}/{m}.md"))
            if not ids:
                return []
            target: str | list[str] = [p.memory_uri(m) for m in ids]
        else:
            target = p.memory_dir
        plans = self._tag_plans(query)
        outcomes = await asyncio.gather(*(self._find_records(entry, p, query, target, tags) for tags in plans))
        return [h for hits in outcomes for h in hits]

    async def _find_records(self, entry: ScopeEntry, p: Principal, query: SearchQuery, target: str | list[str],
                            tags: list[str] | None) -> list[Hit]:
        # With tags the server filters before ranking: the first `limit` are what we want unless a
        # file fails its record check (tampered). Without tags, filter here and over-fetch.
        filtering = tags is None and (query.kinds is not None or query.statuses != frozenset(Status))
        fetch = max(query.limit, min(self._max_fetch, query.limit * self._overfetch if filtering else query.limit))
        while True:
            try:
                result = await self._call(p, False, lambda a: self._client.find(
                    a, query.text, target_uri=target, limit=fetch, level=2, read_content=True, tags=tags))
            except OVNotFound:
                return []
            raw = [r for r in (result or {}).get("memories", []) if isinstance(r, dict)]
            kept = await self._hits_from(raw, entry, p, query)
            if len(kept) >= query.limit or len(raw) < fetch or fetch >= self._max_fetch:
                return kept[: query.limit]
            fetch = min(self._max_fetch, fetch * 4)

    # -- extracted memories (server-side extraction) ------------------------------------------------
    def _capture_dir(self, p: Principal) -> str:
        return f"{p.user_root}/memories/{CAPTURE_DIR}"

    async def _extraction_index(self, p: Principal, *, force: bool = False) -> ExtractionIndex:
        """The scope's index of extracted files, refreshed at most every `extraction_refresh` s."""
        key = str(p.scope)
        index = self._extracted.setdefault(key, ExtractionIndex(p.scope))
        now = time.monotonic()
        if not force and now - self._extracted_checked.get(key, -1e9) < self._extraction_refresh:
            return index
        async with self._lock("extraction:" + key):
            if not force and now - self._extracted_checked.get(key, -1e9) < self._extraction_refresh:
                return index
            await self._refresh_index(p, index)
            self._extracted_checked[key] = time.monotonic()
        return index

    async def _refresh_index(self, p: Principal, index: ExtractionIndex) -> None:
        try:
            entries = await self._call(p, False, lambda a: self._client.ls(a, self._capture_dir(p)))
        except OVNotFound:
            return
        for e in entries:
            name = str(e.get("uri", "")).rsplit("/", 1)[-1]
            sid = name[:-3] if name.endswith(".md") else ""
            if e.get("isDir") or not _SESSION_ID.match(sid) or sid in index.captures:
                continue
            try:
                text = await self._call(p, False, lambda a, s=sid: self._client.read(a, f"{self._capture_dir(p)}/{s}.md"))
            except OVNotFound:
                continue
            record = decode_capture(text, expected_session=sid)
            if record is not None and record.scope == str(p.scope):  # a record naming another scope is ignored
                index.captures[sid] = record
        diffs: list[tuple[float, str, str, dict[str, Any]]] = []
        for sid in list(index.captures):
            history = f"{p.user_root}/sessions/{sid}/history"
            try:
                archives = await self._call(p, False, lambda a, h=history: self._client.ls(a, h))
            except OVNotFound:
                continue
            for arch in archives:
                uri = str(arch.get("uri", ""))
                if not arch.get("isDir") or not _ARCHIVE.match(uri.rsplit("/", 1)[-1]) or uri in index.seen_archives:
                    continue
                if uri != f"{history}/{uri.rsplit('/', 1)[-1]}":
                    continue
                try:
                    raw = await self._call(p, False, lambda a, u=uri: self._client.read(a, f"{u}/memory_diff.json"))
                    diff = json.loads(raw)
                except OVNotFound:
                    continue  # this commit is still extracting
                except ValueError:
                    index.seen_archives.add(uri)
                    continue
                try:
                    at = datetime.fromisoformat(str(diff.get("extracted_at"))).timestamp()
                except (TypeError, ValueError):
                    at = 0.0
                diffs.append((at, uri, sid, diff))
        for at, uri, sid, diff in sorted(diffs, key=lambda d: (d[0], d[1])):
            index.apply_diff(sid, diff, p.user_root, at)
            index.seen_archives.add(uri)

    async def _search_extracted(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        if p.scope.visibility is not Visibility.PRIVATE or p.peer is not None or Status.ACTIVE not in query.statuses:
            return []
        types = [t for t, k in EXTRACTED_KINDS.items() if query.kinds is None or k in query.kinds]
        if not types:
            return []
        index = await self._extraction_index(p)
        if not index.captures:
            return []
        if entry.memory_ids is not None:
            target: str | list[str] = sorted(f.uri for f in index.files.values()
                                             if f.memory_type in types and extracted_id(p.scope, f.uri) in entry.memory_ids)
            if not target:
                return []
        else:
            target = [f"{p.user_root}/memories/{t}" for t in types]
        fetch, refreshed = query.limit, False
        while True:
            try:
                result = await self._call(p, False, lambda a: self._client.find(
                    a, query.text, target_uri=target, limit=fetch, level=2, read_content=True))
            except OVNotFound:
                return []
            raw = [r for r in (result or {}).get("memories", []) if isinstance(r, dict)]
            if not refreshed and any(isinstance(r.get("uri"), str) and r["uri"] not in index.files for r in raw):
                index = await self._extraction_index(p, force=True)  # a capture finished since the last look
                refreshed = True
            kept: list[Hit] = []
            for item in raw:
                hit = await self._extracted_hit(item, index, p, entry, types)
                if hit is not None:
                    kept.append(hit)
            if len(kept) >= query.limit or len(raw) < fetch or fetch >= self._max_fetch:
                return kept[: query.limit]
            fetch = min(self._max_fetch, fetch * 4)

    async def _extracted_hit(self, item: dict[str, Any], index: ExtractionIndex, p: Principal, entry: ScopeEntry,
                             types: list[str]) -> Hit | None:
        uri = item.get("uri")
        if item.get("level") not in (2, None) or not isinstance(uri, str):
            return None
        f = index.files.get(uri)
        if f is None or f.memory_type not in types or f"memory_type={f.memory_type}" not in (item.get("tags") or []):
            return None  # not produced by one of this scope's captures, or not tagged by the extractor
        capture = index.captures.get(f.session_id)
        if capture is None or capture.scope != str(p.scope):
            return None
        memory_id = extracted_id(p.scope, uri)
        if entry.memory_ids is not None and memory_id not in entry.memory_ids:
            return None
        content = item.get("content")
        if not isinstance(content, str):
            try:
                content = await self._call(p, False, lambda a: self._client.read(a, uri))
            except OVNotFound:
                return None
        score = item.get("score")
        score = min(1.0, max(0.0, float(score))) if isinstance(score, (int, float)) else 0.0
        return Hit(memory=stored_from_extracted(p.scope, f, capture, content), scope=p.scope, score=score)

    async def _extracted_memory(self, p: Principal, memory_id: str) -> StoredMemory | None:
        """An extracted memory of a private scope by id (for get/delete/list), or None."""
        if p.scope.visibility is not Visibility.PRIVATE or p.peer is not None:
            return None
        index = await self._extraction_index(p)
        f = index.by_id(memory_id)
        if f is None:
            index = await self._extraction_index(p, force=True)
            f = index.by_id(memory_id)
        capture = index.captures.get(f.session_id) if f is not None else None
        if f is None or capture is None or capture.scope != str(p.scope):
            return None
        try:
            content = await self._call(p, False, lambda a: self._client.read(a, f.uri))
        except OVNotFound:
            return None
        return stored_from_extracted(p.scope, f, capture, content)

    async def _hits_from(self, raw: list[dict[str, Any]], entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        out: list[Hit] = []
        now = query.at()
        for item in raw:
            if item.get("level") not in (2, None):
                continue  # directory summaries (levels 0/1)
            memory_id = p.memory_id_of(item.get("uri"))
            if memory_id is None:
                continue  # outside this scope's own directory: its scope cannot be established
            if entry.memory_ids is not None and memory_id not in entry.memory_ids:
                continue
            text = item.get("content")
            try:
                record = decode_record(text, expected_scope=p.scope, expected_id=memory_id) if isinstance(text, str) else None
            except CorruptRecord:
                record = None
            if record is None:  # content not inlined or truncated: read the file itself (alarms if it is corrupt)
                record = await self._read_quietly(p, memory_id)
                if record is None:
                    continue
            if record.status not in query.statuses or (query.kinds is not None and record.kind not in query.kinds):
                continue
            if record.expired(now):  # 0.5.2's find cannot express "expires_at > now" (see module docstring)
                continue
            score = item.get("score")
            score = min(1.0, max(0.0, float(score))) if isinstance(score, (int, float)) else 0.0
            out.append(Hit(memory=record, scope=p.scope, score=score))
        return out

    # -- conversation capture (server-side extraction) -------------------------------------------
    async def capture(self, scope: ScopeKey, messages: Sequence[ConversationMessage], *, session_key: str,
                      provenance: Provenance) -> CaptureReceipt:
        """Post messages to the scope's own session, record the capture, commit; extraction runs on the server.

        Only PRIVATE scopes: 0.5.2 writes what it extracts into the committing user's own
        `memories/<type>/` directories, and only a private scope owns those (an agent scope is a peer
        inside the user, whose extraction targets the server cannot be told apart from the user's).
        The capture record (`memories/vbcap/<session>.md`, in the same user's space) holds the
        ScopeKey and provenance; `search` surfaces an extracted file only through it."""
        scope = require_scope(scope)
        if scope.visibility is not Visibility.PRIVATE:
            raise InvalidRequest("conversation capture is only for private scopes", backend=self.name, scope=scope)
        if not isinstance(session_key, str) or not session_key:
            raise InvalidRequest("session_key must be a non-empty string")
        if not isinstance(provenance, Provenance):
            raise InvalidRequest("capture needs a Provenance")
        if not messages:
            raise InvalidRequest("capture needs at least one message", backend=self.name, scope=scope)
        p = self.mapper.principal(scope)
        session_id = "vb-" + hashlib.sha256(f"{scope}\x00{session_key}".encode()).hexdigest()[:40]
        for message in messages:
            if message.role not in ("user", "assistant", "system"):
                raise InvalidRequest(f"unknown message role {message.role!r}")
        record = encode_capture(CaptureRecord(session_id, str(scope), provenance, time.time()))
        record_uri = f"{self._capture_dir(p)}/{session_id}.md"
        await self._call(p, True, lambda a: self._client.write(a, record_uri, record, mode="replace", wait=True))
        for message in messages:
            await self._call(p, True, lambda a, m=message: self._client.add_message(a, session_id, m.role, m.content))
        result = await self._call(p, True, lambda a: self._client.commit(a, session_id))
        index = self._extracted.get(str(scope))
        if index is not None:
            index.captures.pop(session_id, None)  # re-read: the provenance may have changed
        self._extracted_checked.pop(str(scope), None)
        return CaptureReceipt(backend_session_id=session_id, accepted_messages=len(messages), task_id=result.get("task_id"))

    async def wait_for_capture(self, scope: ScopeKey, receipt: CaptureReceipt, *, deadline: float | None = None) -> dict[str, Any]:
        """Poll the commit task until it finishes (or `TaskTimeout` after the deadline), then wait
        for the server's processing queue to drain: a completed extraction task has written its
        files, but their vectors are indexed asynchronously, so without this wait a search right
        after it may not surface what the task extracted yet."""
        p = self.mapper.principal(require_scope(scope))
        if not receipt.task_id:
            raise InvalidRequest("receipt has no task id")
        limit = deadline or self._capture_deadline
        started = time.monotonic()
        task = await self._call(p, False, lambda a: self._client.wait_task(a, receipt.task_id, deadline=limit))
        if task.get("status") == "completed":
            remaining = max(1.0, limit - (time.monotonic() - started))
            await self._call(p, False, lambda a: self._client.wait_processed(a, timeout=remaining))
        return task

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Erasure: delete the subject's whole OpenViking user tree — private memories, what the
        server extracted from its captures, capture records, sessions and its agents' peer
        directories — including files the bridge never listed (`list_scopes` only sees bridge
        records). Returns 1 if a tree was deleted, 0 if the subject had none."""
        p = self.mapper.principal(ScopeKey.private(tenant_id, subject_user_id))
        try:
            # the namespace root itself may only be deleted by ROOT: delete each subtree instead
            children = await self._call(p, False, lambda auth: self._client.ls(auth, p.user_root))
            for child in children:
                uri, is_dir = child.get("uri"), bool(child.get("isDir"))
                if isinstance(uri, str) and uri.startswith(p.user_root + "/"):
                    await self._call(p, False, lambda auth, uri=uri, is_dir=is_dir: self._client.delete(auth, uri, recursive=is_dir, wait=True))
        except OVNotFound:
            return 0
        finally:
            self._extracted.pop(str(p.scope), None)
            self._extracted_checked.pop(str(p.scope), None)
        return 1

    # -- administration -----------------------------------------------------------------------------
    async def drop_global(self) -> None:
        await self._drop_account(self.mapper.global_account)

    async def _drop_account(self, account: str) -> None:
        try:
            await self._client.delete_account(self._root, account)
        except OVNotFound:
            pass
        await self._keys.remove_account(account)
        self._accounts.discard(account)
        self._users = {u for u in self._users if u[0] != account}

    async def drop_namespace(self) -> int:
        """Delete every account of this namespace (for tests). Returns how many were deleted."""
        accounts = await self._client.list_accounts(self._root)
        prefix = self.mapper.namespace
        names = [a.get("account_id") for a in accounts]
        mine = [n for n in names if isinstance(n, str) and (n.startswith(prefix + "-") or n == self.mapper.global_account)]
        for name in mine:
            await self._drop_account(name)
        return len(mine)
