"""Raw SQLite errors leave the local store only as members of the error tree —
a held lock is retryable, a full disk is an operator's job, a damaged file names itself — and
every other failure of the store is typed too (a raw driver error tells the caller nothing it can act on and may carry a path or a value)."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import sqlite3
import typing
from pathlib import Path

import numpy as np
import pytest

import adapters.local as local_package
from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status
from adapters.errors import InvalidRequest, BackendUnavailable
from adapters.local import LocalBackend
from adapters.local.errors import CorruptStore, EmbeddingFailed, StorageBusy, StorageFull
from adapters.scopes import ScopeKey, ScopeSet
from identity.errors import CorruptStorage, VikingBridgeError
from identity.errors import Unavailable as UnavailableCategory

ALICE = ScopeKey.private("acme", "alice")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


async def test_a_held_lock_is_a_retryable_storage_busy_not_a_raw_operational_error(tmp_path):
    b = LocalBackend(tmp_path / "s", busy_timeout_s=0.05)
    m = await b.put(ALICE, mem("before the lock"), idempotency_key="k0")
    holder = sqlite3.connect(tmp_path / "s" / "memories.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
    for attempt in (
        lambda: b.put(ALICE, mem("blocked"), idempotency_key="k1"),
        lambda: b.update(ALICE, m.id, MemoryPatch(status=Status.SUPERSEDED)),
        lambda: b.delete(ALICE, m.id),
    ):
        with pytest.raises(StorageBusy) as caught:
            await attempt()
        err = caught.value
        assert err.retryable and isinstance(err, BackendUnavailable) and isinstance(err, UnavailableCategory)
        assert "memories.sqlite3" in str(err) and err.path.endswith("memories.sqlite3")
    # readers are not blocked by a writer (WAL), and nothing half-written is visible
    assert [x.id for x in await b.list(ALICE)] == [m.id]
    holder.execute("ROLLBACK")
    holder.close()
    assert (await b.put(ALICE, mem("blocked"), idempotency_key="k1")).created  # the retry goes through
    await b.aclose()


async def test_a_full_database_is_storage_full_and_stores_nothing(tmp_path):
    b = LocalBackend(tmp_path / "s")
    await b.put(ALICE, mem("fits"), idempotency_key="k0")
    before = await b.store_marker()
    pages = b._db.execute("PRAGMA page_count").fetchone()[0]
    b._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite answers SQLITE_FULL past this: a full disk
    with pytest.raises(StorageFull) as caught:
        await b.put_many([(ALICE, mem(f"too much {i} " + "x" * 2000), f"k{i + 1}") for i in range(50)])
    assert not caught.value.retryable and isinstance(caught.value, UnavailableCategory)
    assert "memories.sqlite3" in str(caught.value)
    assert b.count() == 1 and await b.store_marker() == before  # all or nothing, the counter too
    assert len((await b.search(SearchQuery(ScopeSet.of(ALICE), "too much", statuses=frozenset(Status)))).hits) == 1
    b._db.execute("PRAGMA max_page_count = 1073741823")  # room again: the same store keeps working
    assert (await b.put(ALICE, mem("after"), idempotency_key="k-after")).created
    await b.aclose()


async def test_a_damaged_header_is_corrupt_storage_naming_the_file(tmp_path):
    b = LocalBackend(tmp_path / "s")
    await b.put(ALICE, mem("x"), idempotency_key="k")
    await b.aclose()
    db = tmp_path / "s" / "memories.sqlite3"
    with open(db, "r+b") as f:
        f.write(b"this is not sqlite")  # over "SQLite format 3\0"
    with pytest.raises(CorruptStore) as caught:
        LocalBackend(tmp_path / "s")
    assert isinstance(caught.value, CorruptStorage) and caught.value.path == str(db)
    assert str(db) in str(caught.value)


async def test_a_damaged_page_is_corrupt_storage_not_a_raw_database_error(tmp_path):
    b = LocalBackend(tmp_path / "s")
    await b.put_many([(ALICE, mem(f"row {i} " + "y" * 300), f"k{i}") for i in range(400)])
    await b.aclose()
    db = tmp_path / "s" / "memories.sqlite3"
    page = sqlite3.connect(db).execute("PRAGMA page_size").fetchone()[0]
    size = db.stat().st_size
    with open(db, "r+b") as f:  # garble every page after the schema page: the table b-trees
        for offset in range(page, size, page):
            f.seek(offset)
            f.write(bytes([0xA5]) * page)
    with pytest.raises(CorruptStore) as caught:
        reopened = LocalBackend(tmp_path / "s")
        try:
            await reopened.list(ALICE)
            await reopened.search(SearchQuery(ScopeSet.of(ALICE), "row"))
        finally:
            await reopened.aclose()
    assert caught.value.path == str(db)


class _FailingEmbedder:
    signature = "hashing-ngram-v1/dim=8"
    dimension = 8

    def __init__(self, result: object) -> None:
        self.result = result

    async def embed(self, texts):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


async def test_an_embedder_failure_or_a_nan_vector_is_typed_and_stores_nothing(tmp_path):
    for result, retryable in ((RuntimeError("model down"), True), (np.full((1, 8), np.nan, dtype=np.float32), False), (np.zeros((1, 3)), False)):
        b = LocalBackend(tmp_path / f"s{retryable}{id(result)}", _FailingEmbedder(result))
        with pytest.raises(EmbeddingFailed) as caught:
            await b.put(ALICE, mem("x"), idempotency_key="k")
        assert caught.value.retryable is retryable and b.count() == 0
        await b.aclose()


async def test_malformed_input_to_every_method_raises_only_typed_errors(tmp_path):
    b = LocalBackend(tmp_path / "s")
    m = await b.put(ALICE, mem("ok"), idempotency_key="k")
    calls = [
        lambda: b.put(ALICE, mem("lone \udc80 surrogate"), idempotency_key="k1"),
        lambda: b.put(ALICE, NewMemory("x", "note\ud800", PROV), idempotency_key="k2"),
        lambda: b.put(ALICE, mem("x", metadata={"big": 10**5000}), idempotency_key="k3"),
        lambda: b.put(ALICE, mem("x", metadata={"s": "\udfff"}), idempotency_key="k4"),
        lambda: b.put(ALICE, NewMemory("x", "note", Provenance("alice", "assistant", "s\udc00")), idempotency_key="k5"),
        lambda: b.put(ALICE, NewMemory(None, "note", PROV), idempotency_key="k6"),  # type: ignore[arg-type]
        lambda: b.put(ALICE, mem("x"), idempotency_key="a:b"),
        lambda: b.put(ALICE, mem("x"), idempotency_key=None),  # type: ignore[arg-type]
        lambda: b.put(ALICE, "not a memory", idempotency_key="k7"),  # type: ignore[arg-type]
        lambda: b.put_many([("not", "a", "tuple", "of three")]),  # type: ignore[list-item]
        lambda: b.update(ALICE, m.id, "patch"),  # type: ignore[arg-type]
        lambda: b.update(ALICE, m.id, MemoryPatch(status="active")),  # type: ignore[arg-type]
        lambda: b.update(ALICE, m.id, MemoryPatch(confidence=float("nan"))),
        lambda: b.update(ALICE, m.id, MemoryPatch(content="\ud800")),
        lambda: b.list(ALICE, limit="abc"),  # type: ignore[arg-type]
        lambda: b.list(ALICE, statuses=frozenset({"active"})),  # type: ignore[arg-type]
        lambda: b.list(ALICE, limit=0),
        lambda: b.list_page(ALICE, cursor=b"raw"),  # type: ignore[arg-type]
        lambda: b.find_by_idempotency_key(ALICE, "a:b"),
        lambda: b.list_scopes("a:b"),
        lambda: b.list_scopes(None),  # type: ignore[arg-type]
        lambda: b.search("not a query"),  # type: ignore[arg-type]
        lambda: b.search(SearchQuery(ScopeSet.of(ALICE), "\udc80")),
        lambda: b.get(None, m.id),  # type: ignore[arg-type]
        lambda: b.erase_subject_traces("acme", "a:b"),
    ]
    for call in calls:
        with pytest.raises(VikingBridgeError):
            await call()
    with pytest.raises(InvalidRequest):
        b.search_vector(ScopeSet.of(ALICE), np.full(b.embedder.dimension, np.nan), limit=3)
    with pytest.raises(InvalidRequest):
        b.search_vector(ScopeSet.of(ALICE), np.zeros(3), limit=3)
    assert b.count() == 1 and (await b.get(ALICE, m.id)).content == "ok"  # nothing was written
    await b.aclose()
    with pytest.raises(BackendUnavailable):  # a closed store says so
        await b.get(ALICE, m.id)


def _raised_class(module: object, target: ast.expr) -> object:
    """The class a `raise` statement's expression produces, resolved in its module."""
    if isinstance(target, ast.Call):
        target = target.func
    if isinstance(target, ast.Attribute) and target.attr == "_damaged":  # LocalBackend._damaged -> DamagedRecord
        return typing.get_type_hints(LocalBackend._damaged)["return"]
    if not isinstance(target, ast.Name):
        return None
    found = getattr(module, target.id, None) or getattr(builtins, target.id, None)
    if inspect.isfunction(found):  # a factory such as storage_error: judged by its return annotation
        return typing.get_type_hints(found).get("return")
    return found


def test_every_raise_in_the_local_backend_is_a_member_of_the_error_tree():
    """Item G, checked on the source: each `raise X(...)` in adapters/local/** raises a class
    under VikingBridgeError (bare `raise` re-raises what was caught); no `assert` either."""
    package_dir = Path(inspect.getfile(local_package)).parent
    offenders = []
    for source in sorted(package_dir.glob("*.py")):
        module = importlib.import_module("adapters.local" if source.stem == "__init__" else f"adapters.local.{source.stem}")
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                cls = _raised_class(module, node.exc)
                if not (isinstance(cls, type) and issubclass(cls, VikingBridgeError)):
                    offenders.append(f"{source.name}:{node.lineno} raises {ast.unparse(node.exc)[:60]}")
            if isinstance(node, ast.Assert):
                offenders.append(f"{source.name}:{node.lineno} assert (AssertionError is not in the tree)")
    assert offenders == []


def test_storage_errors_map_sqlite_result_codes(tmp_path):
    from adapters.local.errors import StorageIOError, storage_error

    def err(code: int, text: str) -> sqlite3.Error:
        e = sqlite3.OperationalError(text)
        e.sqlite_errorcode = code  # type: ignore[attr-defined]
        return e

    path = tmp_path / "memories.sqlite3"
    assert isinstance(storage_error(err(5, "database is locked"), path), StorageBusy)
    assert isinstance(storage_error(err(517, "database is locked"), path), StorageBusy)  # SQLITE_BUSY_SNAPSHOT
    assert isinstance(storage_error(err(13, "database or disk is full"), path), StorageFull)
    assert isinstance(storage_error(err(11, "database disk image is malformed"), path), CorruptStore)
    assert isinstance(storage_error(err(26, "file is not a database"), path), CorruptStore)
    assert isinstance(storage_error(err(10, "disk I/O error"), path), StorageIOError)
    assert isinstance(storage_error(sqlite3.OperationalError("database is locked"), path), StorageBusy)  # no code: by text
    assert isinstance(storage_error(PermissionError(13, "Permission denied"), path), StorageIOError)
