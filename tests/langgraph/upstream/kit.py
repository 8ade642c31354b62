"""The setup LangGraph's upstream store tests get here: `BridgeStore`s over fresh local bridges.

`Rooted(store, root)` shows the store as LangGraph's tests expect one: free namespaces. Each
namespace `ns` is the bridge namespace `root + ns` (root = the user's own ("memories", <user>)),
added on the way in (get, put, search prefixes, list_namespaces' prefix and depth) and removed on
the way out; the store's own behaviour is untouched. `make_store(fields=...)` is the adapted
`InMemoryStore(index={..., "fields": fields})`; the `store`/`vector_store` fixtures replace the
PostgresStore ones; `_create_vector_store` replaces the helper of the same name.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest
from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem, SearchOp
from langgraph.store.base.batch import AsyncBatchedBaseStore

from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore
from tests.langgraph.storekit import Keys

__all__ = ["Rooted", "make_store", "store", "vector_store", "fake_embeddings", "MockAsyncBatchedStore", "limit",
           "_create_vector_store", "PostgresStore", "CharacterEmbeddings"]

PostgresStore = CharacterEmbeddings = Any  # the upstream annotations, kept verbatim in the copied tests
_OPEN: list[tuple[BridgeStore, MemoryBridge, Keys, Path]] = []


class Rooted(BaseStore):
    def __init__(self, inner: BridgeStore, root: tuple[str, ...]) -> None:
        self.inner, self.root = inner, root

    def _in(self, op: Op) -> Op:
        r = self.root
        if isinstance(op, GetOp):
            return GetOp(r + tuple(op.namespace), op.key, op.refresh_ttl)
        if isinstance(op, PutOp):
            return PutOp(r + tuple(op.namespace), op.key, op.value, op.index, op.ttl)
        if isinstance(op, SearchOp):
            return SearchOp(r + tuple(op.namespace_prefix), op.filter, op.limit, op.offset, op.query, op.refresh_ttl)
        if isinstance(op, ListNamespacesOp):
            conds = list(op.match_conditions or ())
            prefixed = [MatchCondition("prefix", r + tuple(c.path)) if c.match_type == "prefix" else c for c in conds]
            if not any(c.match_type == "prefix" for c in conds):
                prefixed.insert(0, MatchCondition("prefix", r))
            depth = None if op.max_depth is None else op.max_depth + len(r)
            return ListNamespacesOp(tuple(prefixed), depth, op.limit, op.offset)
        return op

    def _out(self, result: Result) -> Result:
        n = len(self.root)
        if isinstance(result, SearchItem):
            return SearchItem(result.namespace[n:], result.key, result.value, result.created_at, result.updated_at, result.score)
        if isinstance(result, Item):
            return Item(value=result.value, key=result.key, namespace=result.namespace[n:], created_at=result.created_at, updated_at=result.updated_at)
        if isinstance(result, list):
            return [tuple(x[n:]) if isinstance(x, tuple) else self._out(x) for x in result]
        return result

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._out(r) for r in self.inner.batch([self._in(o) for o in ops])]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._out(r) for r in await self.inner.abatch([self._in(o) for o in ops])]


def make_store(fields: list[str] | None = None, **_: Any) -> Rooted:
    home = Path(tempfile.mkdtemp(prefix="lg-upstream-"))
    bridge = MemoryBridge.open_local(home / "bridge")
    keys = Keys(home / "keys")
    identity = _sync(keys.login("alice", departments=["eng"], workspace="alpha"))
    inner = BridgeStore(bridge, identity, index_fields=fields)
    _OPEN.append((inner, bridge, keys, home))
    return Rooted(inner, ("memories", "alice"))


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    while _OPEN:
        inner, bridge, keys, home = _OPEN.pop()
        inner.close()
        _sync(bridge.aclose())
        keys.close()
        shutil.rmtree(home, ignore_errors=True)


def _sync(coro: Any) -> Any:
    """Run a setup coroutine to completion from sync or async tests alike (its own loop, its own thread)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture
def store() -> Rooted:
    return make_store()


@pytest.fixture
def vector_store() -> Rooted:
    return make_store()


@pytest.fixture
def fake_embeddings() -> Any:
    return None  # the bridge embeds with its own embedder; the upstream tests only pass this through


@contextmanager
def _create_vector_store(vector_type: str, distance_type: str, fake_embeddings: Any, text_fields: list[str] | None = None,
                         enable_ttl: bool = True) -> Iterator[Rooted]:
    yield make_store(fields=text_fields)


class MockAsyncBatchedStore(AsyncBatchedBaseStore):
    """Upstream's: an AsyncBatchedBaseStore over a store (here a BridgeStore)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self._store = make_store()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._store.batch(ops)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._store.abatch(ops)


def limit(reason: str) -> pytest.MarkDecorator:
    """A documented limit (docs/langgraph.md, "Upstream cases"): the case must keep failing."""
    return pytest.mark.xfail(strict=True, reason=reason)
