"""`OpenVikingBackend`: the MemoryBackend protocol on an OpenViking 0.5.2 server.

Never decides who may see what. It executes exactly the ScopeSet it is handed: one `find` per
scope entry, each restricted (target_uri) to that scope's own directory and — in api_key mode —
sent with that scope principal's OWN user key, so the server's per-user isolation backs every
query; then every hit is mapped back to a ScopeKey from its URI and checked against the ScopeSet
(and the entry's memory_ids) before it leaves. Anything whose scope cannot be established is
dropped. A scope whose call fails lands in `SearchResult.failed_scopes`; it is never silently
missing.

Two modes (see docs/openviking.md):
- `api_key` (recommended): the root key only provisions accounts/users; each principal's user
  key lives in a `KeyStore`.
- `trusted`: every call carries the root key plus identity headers; the bridge is the only
  boundary, the root key a master credential.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any, Literal, Sequence

import httpx

from adapters.base import (
    Capabilities,
    CaptureReceipt,
    ConversationMessage,
    Hit,
    MemoryPatch,
    NewMemory,
    Provenance,
    SearchQuery,
    SearchResult,
    Status,
    StoredMemory,
    require_scope,
)
from adapters.errors import BackendError, EmptyScopeError, InvalidRequest, NotFound, UnsupportedFilter
from adapters.openviking.client import Auth, OpenVikingClient, RetryPolicy, SecretKey
from adapters.openviking.errors import OVConflict, OVNotFound, OVUnauthenticated
from adapters.openviking.keystore import FileKeyStore, KeyStore, MemoryKeyStore
from adapters.openviking.mapping import (
    ADMIN_USER,
    Principal,
    ScopeMapper,
    check_memory_id,
    memory_id_for,
)
from adapters.openviking.record import HEADER_PREFIX, RecordError, decode_record, encode_record
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet, Visibility

__all__ = ["OpenVikingBackend", "Mode"]

Mode = Literal["api_key", "trusted"]


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
        self.capabilities = Capabilities(
            native_multi_scope_query=False,  # one call per scope principal (per-user keys)
            server_side_extraction=False,  # capture() works, but extracted files are not yet surfaced as records
            time_decay=False,
            delete_by_subject=False,
            memory_id_restriction=True,  # pushed into find as a list of exact target URIs
            list_scopes=True,
            search_after_write_lag=False,  # writes use wait=true: searchable when put returns
            exact_search=False,
            supported_filters=frozenset(),
        )

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
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy = RetryPolicy(),
        timeout: float = 30.0,
        **kw: Any,
    ) -> "OpenVikingBackend":
        store: KeyStore | None = None
        if mode == "api_key":
            store = FileKeyStore(key_store_path, encryption_key=key_store_encryption_key) if key_store_path else MemoryKeyStore()
        client = OpenVikingClient(url, transport=transport, retry=retry, timeout=httpx.Timeout(timeout, connect=5.0))
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
        except RecordError as exc:
            raise NotFound(f"memory {memory_id} is not a valid record here ({exc})", backend=self.name, scope=p.scope) from None

    async def _write_record(self, p: Principal, memory: StoredMemory) -> None:
        uri = p.memory_uri(memory.id)
        body = encode_record(memory)
        await self._call(p, True, lambda auth: self._client.write(auth, uri, body, mode="replace", wait=True))

    # -- MemoryBackend --------------------------------------------------------------------------
    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        scope = require_scope(scope)
        if not isinstance(memory, NewMemory):
            raise InvalidRequest("put needs a NewMemory")
        p = self.mapper.principal(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        async with self._lock("mem:" + p.memory_uri(memory_id)):
            try:
                return await self._read_record(p, memory_id, create=True)
            except NotFound:
                pass
            stored = StoredMemory.from_new(memory_id, scope, memory)
            await self._write_record(p, stored)
            return stored

    async def get(self, scope: ScopeKey, memory_id: str) -> StoredMemory:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        try:
            check_memory_id(memory_id)
        except InvalidRequest:
            raise NotFound(f"no memory {str(memory_id)[:40]!r}", backend=self.name, scope=scope) from None
        return await self._read_record(p, memory_id)

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        current = await self.get(scope, memory_id)
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
        except (NotFound, InvalidRequest):
            return False
        uri = p.memory_uri(memory_id)
        async with self._lock("mem:" + uri):
            await self._call(p, False, lambda auth: self._client.delete(auth, uri, wait=True))
        return True

    async def list(self, scope: ScopeKey, *, statuses: frozenset[Status] | None = None, limit: int = 1000) -> Sequence[StoredMemory]:
        scope = require_scope(scope)
        p = self.mapper.principal(scope)
        try:
            entries = await self._call(p, False, lambda auth: self._client.ls(auth, p.memory_dir))
        except OVNotFound:
            return []
        ids = [mid for e in entries if not e.get("isDir") and (mid := p.memory_id_of(e.get("uri")))]
        records = await asyncio.gather(*(self._read_quietly(p, mid) for mid in ids))
        out = [r for r in records if r is not None and (statuses is None or r.status in statuses)]
        out.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return out[:limit]

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
            if isinstance(outcome, InvalidRequest):
                raise outcome
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome
                failed.append(entry.key)
                reasons.append(f"{entry.key}: {type(outcome).__name__}: {outcome}"[:300])
                continue
            hits.extend(outcome)
        # second wall: every hit's scope must be in the set and permitted for that memory id
        hits = [h for h in hits if h.scope == h.memory.scope and query.scopes.permits(h.scope, h.memory.id)]
        hits.sort(key=lambda h: (-h.score, str(h.scope), h.memory.id))
        return SearchResult(hits=tuple(hits[: query.limit]), failed_scopes=tuple(failed), failure_reasons=tuple(reasons))

    async def _search_entry(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        auth = await self._auth(p, create=False)
        if auth is None:
            return []  # nothing was ever stored for this principal
        if entry.memory_ids is not None:
            ids = sorted(m for m in entry.memory_ids if isinstance(m, str) and p.memory_id_of(f"{p.memory_dir}/{m}.md"))
            if not ids:
                return []
            target: str | list[str] = [p.memory_uri(m) for m in ids]
        else:
            target = p.memory_dir
        filtering = query.kinds is not None or query.statuses != frozenset(Status) or entry.memory_ids is not None
        fetch = min(self._max_fetch, query.limit * self._overfetch if filtering else query.limit)
        fetch = max(fetch, query.limit)
        while True:
            try:
                result = await self._call(p, False, lambda a: self._client.find(
                    a, query.text, target_uri=target, limit=fetch, level=2, read_content=True))
            except OVNotFound:
                return []
            raw = [r for r in (result or {}).get("memories", []) if isinstance(r, dict)]
            kept = await self._hits_from(raw, entry, p, query)
            if len(kept) >= query.limit or len(raw) < fetch or fetch >= self._max_fetch:
                return kept[: query.limit]
            fetch = min(self._max_fetch, fetch * 4)

    async def _hits_from(self, raw: list[dict[str, Any]], entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        out: list[Hit] = []
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
            except RecordError:
                record = None
            if record is None:  # content not inlined or truncated: read the file itself
                record = await self._read_quietly(p, memory_id)
                if record is None:
                    continue
            if record.status not in query.statuses or (query.kinds is not None and record.kind not in query.kinds):
                continue
            score = item.get("score")
            score = min(1.0, max(0.0, float(score))) if isinstance(score, (int, float)) else 0.0
            out.append(Hit(memory=record, scope=p.scope, score=score))
        return out

    # -- conversation capture (server-side extraction) -------------------------------------------
    async def capture(self, scope: ScopeKey, messages: Sequence[ConversationMessage], *, session_key: str,
                      provenance: Provenance) -> CaptureReceipt:
        """Post messages to a per-principal session and commit it; extraction runs on the server."""
        scope = require_scope(scope)
        if scope.visibility not in (Visibility.PRIVATE, Visibility.AGENT):
            raise InvalidRequest("conversation capture is only for private or agent-owned scopes", backend=self.name, scope=scope)
        if not isinstance(session_key, str) or not session_key:
            raise InvalidRequest("session_key must be a non-empty string")
        p = self.mapper.principal(scope)
        session_id = "vb-" + hashlib.sha256(f"{scope}\x00{session_key}".encode()).hexdigest()[:40]
        for message in messages:
            if message.role not in ("user", "assistant", "system"):
                raise InvalidRequest(f"unknown message role {message.role!r}")
        for message in messages:
            await self._call(p, True, lambda a, m=message: self._client.add_message(
                a, session_id, m.role, m.content, peer_id=p.peer))
        result = await self._call(p, True, lambda a: self._client.commit(a, session_id))
        return CaptureReceipt(backend_session_id=session_id, accepted_messages=len(messages), task_id=result.get("task_id"))

    async def wait_for_capture(self, scope: ScopeKey, receipt: CaptureReceipt, *, deadline: float | None = None) -> dict[str, Any]:
        """Poll the commit task until it finishes (or `TaskTimeout` after the deadline)."""
        p = self.mapper.principal(require_scope(scope))
        if not receipt.task_id:
            raise InvalidRequest("receipt has no task id")
        return await self._call(p, False, lambda a: self._client.wait_task(
            a, receipt.task_id, deadline=deadline or self._capture_deadline))

    # -- administration -----------------------------------------------------------------------------
    async def drop_tenant(self, tenant_id: str) -> None:
        """Delete the tenant's whole account (every scope in it) and forget its keys."""
        await self._drop_account(self.mapper.account_for_tenant(tenant_id))

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
