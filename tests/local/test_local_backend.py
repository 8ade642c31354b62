"""The embedded local backend: durability, concurrency, idempotency, scoped exact search."""

from __future__ import annotations

import multiprocessing
import sqlite3

import httpx
import numpy as np
import pytest

from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status
from adapters.shared.embedding import HashingEmbedder, OpenAICompatibleEmbedder, EmbeddingError
from adapters.errors import BackendConflict, EmbedderMismatch, EmptyScopeError, BackendNotFound, UnsupportedFilter
from adapters.local import LocalBackend
from adapters.scopes import EmptyScopeSetError, ScopeEntry, ScopeKey, ScopeSet
from adapters.sync import SyncBackend

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
ALPHA = ScopeKey.workspace("acme", "alpha")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, kind: str = "note", **kw) -> NewMemory:
    return NewMemory(content=text, kind=kind, provenance=PROV, **kw)


@pytest.fixture
async def store(tmp_path):
    backend = LocalBackend(tmp_path / "store")
    yield backend
    await backend.aclose()


async def test_acknowledged_writes_survive_reopen(tmp_path):
    b = LocalBackend(tmp_path / "s")
    stored = await b.put(ALICE, mem("durable fact", metadata={"topic": "x"}), idempotency_key="k1")
    await b.aclose()
    reopened = LocalBackend(tmp_path / "s")
    again = await reopened.get(ALICE, stored.id)
    assert again == stored
    hits = (await reopened.search(SearchQuery(ScopeSet.of(ALICE), "durable fact"))).hits
    assert [h.memory.id for h in hits] == [stored.id]
    await reopened.aclose()


async def test_wrong_embedder_is_refused(tmp_path):
    b = LocalBackend(tmp_path / "s", HashingEmbedder())
    await b.aclose()
    with pytest.raises(EmbedderMismatch, match="hashing-ngram-v1/dim=384.*dim=64"):
        LocalBackend(tmp_path / "s", HashingEmbedder(64))


async def test_idempotent_put_and_conflict(store):
    a = await store.put(ALICE, mem("tea"), idempotency_key="k")
    b = await store.put(ALICE, mem("tea"), idempotency_key="k")
    assert a == b and store.count() == 1
    assert (a.created, b.created) == (True, False)
    with pytest.raises(BackendConflict):
        await store.put(ALICE, mem("coffee"), idempotency_key="k")
    other = await store.put(BOB, mem("tea"), idempotency_key="k")  # same key, other scope: separate
    assert other.id != a.id and store.count() == 2


async def test_batch_is_all_or_nothing(store):
    await store.put(ALICE, mem("tea"), idempotency_key="k")
    with pytest.raises(BackendConflict):
        await store.put_many([(ALPHA, mem("fresh"), "k2"), (ALICE, mem("coffee"), "k")])
    assert await store.list(ALPHA) == [] and store.count() == 1
    assert (await store.search(SearchQuery(ScopeSet.of(ALPHA), "fresh"))).hits == ()


async def test_search_scans_only_the_scope_set_and_still_returns_k(store):
    await store.put_many([(BOB, mem(f"release checklist item {i}"), f"b{i}") for i in range(300)])
    mine = await store.put_many([(ALICE, mem(f"release checklist mine {i}"), f"a{i}") for i in range(5)])
    result = await store.search(SearchQuery(ScopeSet.of(ALICE), "release checklist", limit=5))
    assert {h.memory.id for h in result.hits} == {m.id for m in mine}
    assert all(h.scope == ALICE == h.memory.scope for h in result.hits)


async def test_search_is_exact_against_brute_force(store):
    store.lexical_channel = False  # the vector channel alone is exact nearest neighbours (the fusion: tests/local/test_lexical.py)
    texts = [f"文档 {i} about topic {i % 7} 和 项目 {i % 3}" for i in range(120)]
    await store.put_many([(ALICE if i % 2 else ALPHA, mem(t), f"k{i}") for i, t in enumerate(texts)])
    emb = store.embedder
    q = "topic 3 项目 1"
    qv = (await emb.embed([q]))[0]
    mat = await emb.embed(texts)
    exact = {t: float(mat[i] @ qv) for i, t in enumerate(texts)}
    expected_scores = sorted(exact.values(), reverse=True)[:10]
    got = (await store.search(SearchQuery(ScopeSet.of(ALICE, ALPHA), q, limit=10))).hits
    # the same top-10 scores (ties may order differently), each hit scored exactly
    assert [round(h.score, 5) for h in got] == [round(max(0.0, s), 5) for s in expected_scores]
    assert all(abs(h.score - max(0.0, exact[h.memory.content])) < 1e-5 for h in got)


async def test_status_kind_and_memory_id_filters_apply_before_top_k(store):
    pend = await store.put_many([(ALICE, mem(f"deploy step {i}", status=Status.PENDING), f"p{i}") for i in range(50)])
    active = await store.put(ALICE, mem("deploy step final", kind="procedure"), idempotency_key="a")
    hits = (await store.search(SearchQuery(ScopeSet.of(ALICE), "deploy step", limit=3))).hits
    assert [h.memory.id for h in hits] == [active.id]
    hits = (await store.search(SearchQuery(ScopeSet.of(ALICE), "deploy", kinds=frozenset({"note"}), statuses=frozenset(Status), limit=100))).hits
    assert len(hits) == 50
    only = ScopeSet((ScopeEntry(ALICE, memory_ids=frozenset({pend[7].id})),))
    hits = (await store.search(SearchQuery(only, "deploy", statuses=frozenset(Status), limit=100))).hits
    assert [h.memory.id for h in hits] == [pend[7].id]


async def test_update_never_moves_scope_and_reembeds(store):
    m = await store.put(ALICE, mem("old text"), idempotency_key="k")
    await store.search(SearchQuery(ScopeSet.of(ALICE), "old"))  # load the partition
    updated = await store.update(ALICE, m.id, MemoryPatch(content="brand new words", metadata={"user_id": "bob", "scope": "acme/user/bob"}))
    assert updated.scope == ALICE
    assert (await store.list(BOB)) == []
    hits = (await store.search(SearchQuery(ScopeSet.of(ALICE), "brand new words"))).hits
    assert hits[0].memory.id == m.id and hits[0].score > 0.9


async def test_get_and_delete_are_scope_bound(store):
    m = await store.put(ALICE, mem("x"), idempotency_key="k")
    with pytest.raises(BackendNotFound):
        await store.get(BOB, m.id)
    assert not await store.delete(BOB, m.id)
    assert await store.get(ALICE, m.id)


async def test_delete_leaves_no_vector_behind(store):
    m = await store.put(ALICE, mem("forget me"), idempotency_key="k")
    await store.search(SearchQuery(ScopeSet.of(ALICE), "forget"))
    assert await store.delete(ALICE, m.id)
    assert (await store.search(SearchQuery(ScopeSet.of(ALICE), "forget me", statuses=frozenset(Status)))).hits == ()


async def test_empty_scope_and_unknown_filters_raise(store):
    with pytest.raises(EmptyScopeSetError):
        ScopeSet(())
    with pytest.raises(EmptyScopeError):
        SearchQuery(None, "x")  # type: ignore[arg-type]
    with pytest.raises(EmptyScopeError):
        await store.get(None, "x")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFilter, match="user_id"):
        await store.search(SearchQuery(ScopeSet.of(ALICE), "x", filters={"user_id": "bob"}))


async def test_list_scopes_is_per_tenant_exact(store):
    await store.put(ScopeKey.private("acme", "a_b"), mem("x"), idempotency_key="k")
    await store.put(ScopeKey.private("acme_x", "a"), mem("x"), idempotency_key="k")
    await store.put(ScopeKey.private("acm", "a"), mem("x"), idempotency_key="k")
    assert await store.list_scopes("acme") == [ScopeKey.private("acme", "a_b")]
    assert await store.list_scopes("acm%") == []


async def test_another_connections_delete_is_seen(tmp_path):
    a = LocalBackend(tmp_path / "s")
    m = await a.put(ALICE, mem("shared secret"), idempotency_key="k")
    assert (await a.search(SearchQuery(ScopeSet.of(ALICE), "shared secret"))).hits
    b = LocalBackend(tmp_path / "s")
    assert await b.delete(ALICE, m.id)
    assert (await a.search(SearchQuery(ScopeSet.of(ALICE), "shared secret"))).hits == ()
    await a.aclose(); await b.aclose()


def _writer(path: str, worker: int, n: int) -> None:
    import asyncio

    async def go() -> None:
        backend = LocalBackend(path)
        for i in range(n):
            await backend.put(ScopeKey.private("acme", f"w{worker}"), mem(f"worker {worker} item {i}"), idempotency_key=f"k{i}")
        await backend.aclose()

    asyncio.run(go())


def test_two_processes_can_write_one_store(tmp_path):
    path = str(tmp_path / "s")
    LocalBackend(path)  # create the schema first
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 40)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    conn = sqlite3.connect(f"{path}/memories.sqlite3")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 80
    conn.close()


def test_sync_facade(tmp_path):
    with SyncBackend(LocalBackend(tmp_path / "s")) as b:
        m = b.put(ALICE, mem("sync works"), idempotency_key="k")
        assert b.get(ALICE, m.id).content == "sync works"


async def test_sync_facade_refuses_a_running_loop(tmp_path):
    facade = SyncBackend(LocalBackend(tmp_path / "s"))
    with pytest.raises(RuntimeError, match="running event loop"):
        facade.list(ALICE)


def test_hashing_embedder_is_deterministic_and_handles_cjk():
    e = HashingEmbedder(128)
    a, b = e.embed_sync(["我喜欢简洁的回答", "我喜欢简洁的回答"])
    assert np.array_equal(a, b) and abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    near, far = e.embed_sync(["我喜欢简短的回答", "数据库迁移计划"])
    assert float(a @ near) > float(a @ far)


async def test_openai_compatible_embedder_and_its_errors():
    seen_auth = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen_auth.append(request.headers.get("authorization"))
        n = len(__import__("json").loads(request.content)["input"])
        return httpx.Response(200, json={"data": [{"index": i, "embedding": [3.0, 4.0]} for i in range(n)]})

    client = httpx.AsyncClient(base_url="http://embed.test/v1", transport=httpx.MockTransport(handler))
    e = OpenAICompatibleEmbedder("http://embed.test/v1", "m", 2, api_key="sk-secret", client=client)
    out = await e.embed(["a", "b"])
    assert out.shape == (2, 2) and np.allclose(out[0], [0.6, 0.8])
    assert seen_auth == ["Bearer sk-secret"]
    assert "sk-secret" not in repr(e)
    bad = OpenAICompatibleEmbedder("http://embed.test/v1", "m", 3, client=httpx.AsyncClient(base_url="http://embed.test/v1", transport=httpx.MockTransport(handler)))
    with pytest.raises(EmbeddingError, match="shape"):
        await bad.embed(["a"])


async def test_kind_filter_works_on_the_first_search_after_reopen(tmp_path):
    """Regression: kind codes used to be looked up before the partition (and its kinds) loaded."""
    b = LocalBackend(tmp_path / "s")
    m = await b.put(ALICE, mem("blue-green deploys", kind="procedure"), idempotency_key="k")
    await b.aclose()
    reopened = LocalBackend(tmp_path / "s")
    hits = (await reopened.search(SearchQuery(ScopeSet.of(ALICE), "deploys", kinds=frozenset({"procedure"})))).hits
    assert [h.memory.id for h in hits] == [m.id]
    await reopened.aclose()


async def test_erasure_drops_decode_caches(store):
    from adapters.base import SubjectEraser
    from adapters.local import records as local_backend  # the decode caches live with the row codec

    await store.put(BOB, NewMemory("bob's note", "note", Provenance("bob", "assistant"), metadata={"topic": "bob-private"}), idempotency_key="k")
    await store.list(BOB)
    assert local_backend._provenance_from_json.cache_info().currsize > 0
    assert isinstance(store, SubjectEraser)
    await store.erase_subject_traces("acme", "bob")
    assert local_backend._provenance_from_json.cache_info().currsize == 0
    assert local_backend._metadata_template.cache_info().currsize == 0
