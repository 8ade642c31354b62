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
from typing import Any, Literal

import httpx

from adapters.base import Capabilities
from adapters.errors import InvalidRequest
from adapters.openviking.administration import OpenVikingAdministration
from adapters.openviking.capture import OpenVikingCapture
from adapters.openviking.client import Auth, OpenVikingClient, RetryPolicy, SecretKey
from adapters.openviking.extraction import ExtractionIndex
from adapters.openviking.keystore import FileKeyStore, KeyStore, MemoryKeyStore
from adapters.openviking.mapping import ScopeMapper
from adapters.openviking.memories import OpenVikingMemories
from adapters.openviking.search import OpenVikingSearch
from adapters.shared.cursor import CursorCodec
from adapters.shared.envelope import RecordAlarms

__all__ = ["OpenVikingBackend", "Mode"]


Mode = Literal["api_key", "trusted"]


class OpenVikingBackend(OpenVikingMemories, OpenVikingSearch, OpenVikingCapture, OpenVikingAdministration):
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
        store: KeyStore | None = kw.pop("key_store", None)  # one the caller made (PostgreSQL, shared by replicas)
        if mode == "api_key" and store is None:
            store = FileKeyStore(key_store_path, encryption_key=key_store_encryption_key) if key_store_path else MemoryKeyStore()
        client = OpenVikingClient(url, http_client=http_client, transport=transport, retry=retry, timeout=httpx.Timeout(timeout, connect=5.0))
        return cls(client, root_key=root_api_key, mode=mode, key_store=store, namespace=namespace, **kw)

    def __repr__(self) -> str:
        return f"OpenVikingBackend({self._client.base_url!r}, mode={self.mode!r}, namespace={self.mapper.namespace!r})"

    @property
    def client(self) -> OpenVikingClient:
        return self._client

    async def aclose(self) -> None:
        try:
            await self._client.aclose()
        finally:
            close = getattr(self._keys, "close", None)  # a store on PostgreSQL holds pools
            if close is not None:
                close()


