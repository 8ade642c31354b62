"""`BridgeStore`: LangGraph's `BaseStore` over the bridge, one bridge operation per store step.

Every call is made as the identity the `IdentitySource` verified (identity.py); every namespace
is mapped to a scope by `namespaces.resolve`, which refuses names of other identities; every
read and write is an ordinary bridge operation (`Remember`, `EditMemory`, `Forget`, `FindByKey`,
`ListMemories`, `Recall`) run by `MemoryBridge.execute`, so the policy, limits, session checks
and audit are the bridge's — the store never reads the backend itself and never widens a scope.

    get(ns, key)        the caller's own item: one FindByKey (O(1)); else, in a scope others can
                        write, another writer's item with that ns/key (a walk: keys are per writer)
    put(ns, key, v)     the caller's own item with that ns/key (FindByKey, O(1)) is edited in
                        place (EditMemory); otherwise a new memory (Remember, visibility from the
                        namespace, idempotency key derived from ns/key, so a retried put lands once).
                        The memory must land in exactly the namespace's scope, else it is
                        forgotten again and the put refused (never acknowledged elsewhere)
    delete(ns, key)     Forget of the item get would return (the policy decides whether the caller
                        may forget another writer's)
    search(prefix, query=...)  one Recall narrowed to the namespace's scope (`only_scopes`: the
                        backend is asked for that scope alone; one outside the defaults needs a
                        grant), its items under the prefix (the recall's candidate pool, default
                        50, is that scope's alone); without a query: ListMemories walked in full
    list_namespaces     the namespaces of the items in the scopes the identity reads by default

Keys: a LangGraph key is a label inside the memory's content (items.py), unique per (scope,
namespace, writer), stored with the idempotency key `items.item_key(namespace, key)`: the bridge
namespaces it by the writer, so `FindByKey` finds the caller's own item in O(1) and nobody else's;
in a shared scope two writers' items with the same key are two memories (nobody overwrites
another's item by guessing its key); `get` returns the caller's own, else the most recently
updated one of another writer (found by a walk, see `_others`). An item
whose recorded namespace does not describe the scope it was read from (someone wrote a
("memories", "alice") label into a shared scope through the plain API) is not an item there:
a label never lies about where an item came from.

Filters are evaluated on the values of items the bridge returned for the caller from the one
scope the namespace names. They only remove items, so they cannot widen what is visible; without a
query they are exact (the scope is walked in full); with a query they apply to the recall's
candidates (the backend cannot filter JSON values inside its query), so a filtered semantic
search may return fewer than `limit` items — never other ones.

TTL (`supports_ttl = True`): a put's `ttl` (LangGraph counts minutes) becomes the memory's
`Remember.ttl_s = ttl * 60` on the bridge's clock; from then on the item is gone from get, search
and list_namespaces on every backend (the bridge filters expiry inside the query) and the bridge's
purge deletes it. `ttl_config={"default_ttl": m}` applies to puts without a ttl (BaseStore does it).
`EditMemory` carries no expiry, so a put whose expiry would change — a ttl given for an existing
item, or no ttl for an item that has one (LangGraph: a put without ttl never expires) — re-writes
the item: Forget of the old memory, then Remember of the new value (same key, same created_at, a
new memory id; audited as a forget and a remember). A crash between the two loses the old value of
an item whose put was never acknowledged. A put with an unchanged "no expiry" stays an in-place edit.
Refresh on read is not honoured: an expiry is absolute from the put, because refreshing would re-write
the memory (new id, two audit rows) on every get and search. The store's `ttl_config` therefore
defaults `refresh_on_read` to False, a `ttl_config` asking for True is refused at construction, and
an explicit `refresh_ttl=True` on a read returns the item with its expiry unchanged.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any, Iterable

from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchItem, SearchOp, TTLConfig

from adapters.errors import WrongContext
from adapters.base import Status
from adapters.scopes import ScopeKey, Visibility
from adapters.sync import LoopRunner
from bridge.facade import MemoryBridge
from bridge.doors.langgraph.errors import NamespaceRefused, UnsupportedStoreOperation
from bridge.doors.langgraph.identity import FixedIdentity, IdentitySource
from bridge.errors import Conflict, NotFound, NotPermitted, QuotaExceeded
from bridge.doors.langgraph.items import Found, decode_record, ttl_seconds, Decoded, as_datetime, encode, item_key, matches_filter
from bridge.doors.langgraph.namespaces import has_prefix, matches_condition, Target, default_namespaces, labels_scope, resolve
from bridge.results import RecallResult, WriteResult
from bridge.operations import Forget, Recall, Remember
from bridge.operations.reads import EditMemory, FindByKey, GetMemory, ListMemories
from bridge.vocabulary import Kind, Purpose, parse_kind
from identity.model import MemoryIdentity

if TYPE_CHECKING:
    from bridge.doors.langgraph.service import ServiceBridge

__all__ = ["BridgeStore"]

_PAGE = 500
_LIVE = (Status.ACTIVE.value, Status.PENDING.value)  # what a put edits in place; get shows only active ones
_SEARCH_BUDGET = 1_000_000  # the store returns items, not a prompt: the token budget never hides one


class BridgeStore(BaseStore):
    """A LangGraph store whose every item is a permission-checked bridge memory.

    `identity`: a verified `MemoryIdentity` (one store per caller) or an `IdentitySource` such as
    `AuthUserIdentity(provider)` (one store for a deployment; identity from each run's auth
    context). `kind`: the bridge kind of items whose value names none (`value["kind"]`, if it
    is a bridge kind, is used: kind says what a memory is, the namespace alone where it lives).
    """

    supports_ttl = True
    ttl_config: TTLConfig | None = TTLConfig(refresh_on_read=False)

    def __init__(
        self, bridge: "MemoryBridge | ServiceBridge", identity: MemoryIdentity | IdentitySource, *, kind: Kind | str = Kind.NOTE,
        purpose: Purpose | str = Purpose.CHAT, others_on_miss: bool = True, ttl_config: TTLConfig | None = None,
        index_fields: list[str] | None = None,
    ) -> None:
        if ttl_config is not None:
            if ttl_config.get("refresh_on_read", False):
                raise UnsupportedStoreOperation("this store's TTLs are absolute from the put; refresh_on_read would re-write the memory on every "
                                                "read (a new id and two audit rows), so it is not offered: pass refresh_on_read=False")
            self.ttl_config = TTLConfig(**{**ttl_config, "refresh_on_read": False})
        self.bridge = bridge
        self.identity_source: IdentitySource = FixedIdentity(identity) if isinstance(identity, MemoryIdentity) else identity
        self.kind = parse_kind(kind)
        self.purpose = Purpose(getattr(purpose, "value", purpose))
        self.others_on_miss = others_on_miss
        # LangGraph's `index={"fields": [...]}`: the value paths embedded by a put that names no
        # `index` (None: the whole value). The vectors are the bridge backend's own embedder's.
        self.index_fields = list(index_fields) if index_fields is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop a caller used abatch from (never the private one)
        self._runner: LoopRunner | None = None
        self._runner_lock = threading.Lock()  # one private loop, driven by one thread at a time
        self._private = threading.local()  # set while this thread drives the private loop

    @classmethod
    def over_service(cls, url: str, *, api_key: str | None = None, token: str | None = None, **kwargs: Any) -> "BridgeStore":
        """A store over a running memory service, as the credential's identity (service.py)."""
        from bridge.doors.langgraph.service import ServiceBridge, ServiceIdentity

        service = ServiceBridge(url, api_key=api_key, token=token, http_client=kwargs.pop("http_client", None))
        return cls(service, ServiceIdentity(service), **kwargs)

    # -- BaseStore's two methods ---------------------------------------------------------------
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if not getattr(self._private, "driving", False):
            # only a caller's loop is "the store's loop" a worker thread may hand work to; the
            # private loop runs only while one `batch` drives it, so work handed to it from another
            # thread would wait forever once that call returns
            self._loop = asyncio.get_running_loop()
        identity = await self.identity_source.identity()
        return [await self._run(identity, op) for op in ops]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Blocking: on the loop the store is used from asynchronously (a sync LangGraph node runs
        in a worker thread beside it), else on a private loop. Never inside a running loop."""
        ops = list(ops)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise WrongContext("BridgeStore.batch cannot block inside a running event loop; use the async methods (aget, aput, asearch)")
        loop = self._loop
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()
        with self._runner_lock:  # sync callers of several threads (parallel sync nodes) take turns on the one private loop
            if self._runner is None:
                self._runner = LoopRunner()
            self._private.driving = True
            try:
                return self._runner.run(self.abatch(ops))
            finally:
                self._private.driving = False

    async def _run(self, identity: MemoryIdentity, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(identity, op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.value is None:
                await self._delete(identity, op.namespace, op.key)
                return None
            await self.put_item(identity, op.namespace, op.key, op.value, ttl=op.ttl, index=op.index)
            return None
        if isinstance(op, SearchOp):
            items, _ = await self.search_items(identity, op.namespace_prefix, query=op.query, filter=op.filter, limit=op.limit, offset=op.offset)
            return items
        if isinstance(op, ListNamespacesOp):
            return await self._list_namespaces(identity, op)
        raise UnsupportedStoreOperation(f"not a store operation: {type(op).__name__}")

    # -- reading -----------------------------------------------------------------------------
    async def _walk(self, identity: MemoryIdentity, scope: ScopeKey) -> list[Found]:
        """Every store item of one scope the bridge lets this identity list."""
        out: list[Found] = []
        cursor: str | None = None
        while True:
            page = await self.bridge.execute(identity, ListMemories(scope=scope, cursor=cursor, limit=_PAGE))
            for m in page.memories:
                item = decode_record(m)
                if item is not None and m.scope == str(scope) and labels_scope(item.namespace, scope):
                    out.append(Found(scope, m.memory_id, m.author, item))
            cursor = page.next_cursor
            if cursor is None:
                return out

    async def _read_hits(self, identity: MemoryIdentity, scope: ScopeKey, hits: list[Any]) -> list[Found]:
        out: list[Found] = []
        for r in hits:
            try:
                m = await self.bridge.execute(identity, GetMemory(ref=(scope, r.memory_id)))
            except (NotPermitted, NotFound):
                continue
            item = decode_record(m)
            if item is not None and m.scope == str(scope) and labels_scope(item.namespace, scope):
                out.append(Found(scope, m.memory_id, m.author, item))
        return out

    async def _own(self, identity: MemoryIdentity, target: Target, key: str) -> tuple[Found | None, Any]:
        """The caller's own item with this key: one `FindByKey` (O(1) in the scope's size).
        Returns the item, active or pending (None if the caller has none there), and the record."""
        try:
            record = await self.bridge.execute(identity, FindByKey(scope=target.scope, key=item_key(target.namespace, key)))
        except NotFound:
            return None, None
        item = decode_record(record)
        if (item is None or record.status not in _LIVE or record.scope != str(target.scope)
                or item.namespace != target.namespace or item.key != key or not labels_scope(item.namespace, target.scope)):
            return None, record
        return Found(target.scope, record.memory_id, record.author, item), record

    async def _others(self, identity: MemoryIdentity, target: Target, key: str) -> Found | None:
        """Another writer's item with this key (the newest): only a walk can find it, since keys
        are per writer. Skipped where nobody else can write (the agent scope) or when the store
        was built with `others_on_miss=False`."""
        if not self.others_on_miss or target.scope.visibility is Visibility.AGENT:
            return None
        found = [f for f in await self._walk(identity, target.scope) if f.item.namespace == target.namespace and f.item.key == key]
        return max(found, key=lambda f: f.item.updated_at, default=None)

    async def _get(self, identity: MemoryIdentity, namespace: tuple[str, ...], key: str) -> Item | None:
        target = resolve(namespace, identity)
        # the caller's own item first: in a shared scope another writer cannot shadow it
        own, record = await self._own(identity, target, key)
        if own is not None and record.status != Status.ACTIVE.value:
            own = None  # a pending item is no item until approved
        found = own or await self._others(identity, target, key)
        if found is None:
            return None
        i = found.item
        return Item(value=i.value, key=i.key, namespace=i.namespace, created_at=as_datetime(i.created_at), updated_at=as_datetime(i.updated_at))

    def _targets(self, identity: MemoryIdentity, prefix: tuple[str, ...]) -> list[Target]:
        return default_namespaces(identity) if not prefix else [resolve(prefix, identity)]

    async def search_items(
        self, identity: MemoryIdentity, prefix: tuple[str, ...], *, query: str | None = None, filter: dict[str, Any] | None = None,
        limit: int = 10, offset: int = 0, recall_options: dict[str, Any] | None = None,
    ) -> tuple[list[SearchItem], RecallResult | None]:
        """The search, plus the bridge's RecallResult for a query (its labels: scope, grant)."""
        matches_filter({}, filter)  # a malformed filter is refused before anything is read
        targets = self._targets(identity, tuple(prefix))
        scopes = {t.scope for t in targets}
        hits: list[tuple[Decoded, float | None]] = []
        result: RecallResult | None = None
        if query:
            options = dict(recall_options or {})
            if prefix:  # exactly the namespace's scope: the backend is asked for it alone (a scope outside the defaults needs a grant)
                options.setdefault("only_scopes", tuple(t.scope for t in targets))
            for name, default in (("purpose", self.purpose), ("budget_tokens", _SEARCH_BUDGET), ("min_score", 0.0)):
                options.setdefault(name, default)
            result = await self.bridge.execute(identity, Recall(query=query, **options))
            if not prefix:  # the whole store: every scope the bridge searched for this identity
                scopes = {ScopeKey.parse(s) for s in result.scopes_searched}
            # the recall ranks; the items themselves (wrapper in metadata, the record's times) come
            # from the scopes' walk, joined by memory id. Items the recall did not rank (no overlap
            # with the query: below its floor, or beyond its candidate pool) follow the ranked
            # ones with score 0.0, newest first, so a query search returns every item there is,
            # as LangGraph's stores do; unindexed items (`index=False`) are never ranked and
            # follow last with score None.
            rank: dict[tuple[str, str], tuple[int, float]] = {}
            for n, r in enumerate(result.items):
                # a recall folds memories of equal content into one item (its `duplicates`): each
                # of them ranks as that item does, whichever of them the recall kept
                for ref in ((r.scope, r.memory_id), *((d.scope, d.memory_id) for d in r.duplicates)):
                    rank.setdefault(ref, (n, r.score))
            found: list[Found] = []
            for sc in sorted(scopes, key=str):
                try:
                    found.extend(await self._walk(identity, sc))
                except NotPermitted:
                    # a scope the recall may read only in part (memories shared with this agent,
                    # an injection's sources) cannot be listed: its recalled memories are read one by one
                    found.extend(await self._read_hits(identity, sc, [r for r in result.items if r.scope == str(sc)]))
            ranked = sorted(((rank[(str(f.scope), f.memory_id)], f.item) for f in found
                             if f.item.indexed and (str(f.scope), f.memory_id) in rank), key=lambda x: x[0][0])
            rest = sorted((f.item for f in found if (str(f.scope), f.memory_id) not in rank or not f.item.indexed),
                          key=lambda i: (not i.indexed, -i.updated_at))
            hits = [(i, sc) for (_, sc), i in ranked] + [(i, 0.0 if i.indexed else None) for i in rest]
        else:
            for t in targets:
                hits.extend((f.item, None) for f in await self._walk(identity, t.scope))
            hits.sort(key=lambda h: h[0].updated_at, reverse=True)
        chosen = [(i, s) for i, s in hits if has_prefix(i.namespace, tuple(prefix)) and matches_filter(i.value, filter)]
        page = chosen[offset: offset + limit]
        items = [SearchItem(i.namespace, i.key, i.value, as_datetime(i.created_at), as_datetime(i.updated_at), score=s) for i, s in page]
        return items, result

    async def _list_namespaces(self, identity: MemoryIdentity, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for t in default_namespaces(identity):
            for f in await self._walk(identity, t.scope):
                ns = f.item.namespace
                if op.match_conditions and not all(matches_condition(ns, c) for c in op.match_conditions):
                    continue
                seen.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(seen)[op.offset: op.offset + op.limit]

    # -- writing -----------------------------------------------------------------------------
    def _kind(self, value: Any) -> Kind:
        named = value.get("kind") if isinstance(value, dict) else None
        try:
            return parse_kind(named) if isinstance(named, str) else self.kind
        except ValueError:
            return self.kind

    async def put_item(self, identity: MemoryIdentity, namespace: tuple[str, ...], key: str, value: Any, *, ttl: float | None = None,
                       index: Any = None, **sharing: Any) -> WriteResult | Any:
        """The put, returning the bridge's answer (a WriteResult, or the edited MemoryRecord).

        `ttl`: minutes, as LangGraph counts them (None: never expires). `sharing`: extra
        `Remember` fields of a new item (`visible_to`, `memory_type`, `team_id`) for callers
        that speak the bridge's vocabulary; the policy decides them like any other write.
        `index`: LangGraph's `PutOp.index` (None: the whole value is embedded; False: not
        searchable by a query; a list of field paths: only their text is embedded)."""
        target = resolve(tuple(namespace), identity, for_write=True)
        if index is None:
            index = self.index_fields
        ckey = item_key(target.namespace, key)
        ttl_s = ttl_seconds(ttl)
        for _ in range(2):  # a concurrent put of the same new key: the second finds the first's and edits it
            existing, record = await self._own(identity, target, key)
            if existing is None and record is not None:  # the key holds a memory that is no item here (stale, superseded): replace it
                await self.bridge.execute(identity, Forget(ref=(ScopeKey.parse(record.scope), record.memory_id)))
            created_at = None
            if existing is not None:
                content, meta = encode(target.namespace, key, value, index=index, created_at=existing.item.created_at)
                if ttl_s is None and getattr(record, "expires_at", None) is None and not sharing:
                    return await self.bridge.execute(identity, EditMemory(ref=(existing.scope, existing.memory_id), content=content, metadata=meta))
                # EditMemory carries no expiry (nor sharing): the item is re-written with the new one
                await self.bridge.execute(identity, Forget(ref=(existing.scope, existing.memory_id)))
                created_at = existing.item.created_at
            content, meta = encode(target.namespace, key, value, index=index, created_at=created_at)
            op = Remember(content=content, kind=self._kind(value), visibility=target.visibility, metadata=meta,
                          department_id=target.department_id, idempotency_key=ckey, ttl_s=ttl_s, **sharing)
            try:
                written: WriteResult = await self.bridge.execute(identity, op)
            except QuotaExceeded:
                raise  # a Conflict too, but no collision: retrying cannot help, and its fields say why
            except Conflict:
                continue
            if written.scope != str(target.scope):  # never acknowledge a write the policy placed elsewhere
                await self.bridge.execute(identity, Forget(ref=(ScopeKey.parse(written.scope), written.memory_id)))
                raise NamespaceRefused(f"the bridge would store {namespace!r} in {written.scope}, not {target.scope}; refused")
            return written
        raise Conflict(f"the put of {namespace!r}/{key!r} kept colliding with a concurrent put of the same key")

    async def _delete(self, identity: MemoryIdentity, namespace: tuple[str, ...], key: str) -> None:
        target = resolve(tuple(namespace), identity)
        found = (await self._own(identity, target, key))[0] or await self._others(identity, target, key)
        if found is not None:
            await self.bridge.execute(identity, Forget(ref=(found.scope, found.memory_id)))

    def close(self) -> None:
        with self._runner_lock:
            if self._runner is not None:
                self._runner.close()
                self._runner = None
