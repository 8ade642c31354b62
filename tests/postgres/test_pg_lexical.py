"""The PostgreSQL backend's lexical channel (adapters/postgres/lexical.py), fused inside search.

Guarantees: a lexical match in a scope outside the ScopeSet never comes back and never crowds
out readable matches (the scopes bound the query before ranking); deleted, edited and
non-active memories are not found by their old words; Chinese is found by its characters; the
fusion never returns fewer hits than the vector channel alone.
"""

from __future__ import annotations

from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status
from adapters.postgres import PostgresBackend
from adapters.scopes import ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder
from contract_tests.postgres_server import TestDatabase

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


async def search_ids(b: PostgresBackend, scopes: ScopeSet, text: str, limit: int = 10, **kw) -> list[str]:
    return [h.memory.id for h in (await b.search(SearchQuery(scopes, text, limit=limit, **kw))).hits]


async def test_postgres_lexical_channel_is_scope_bound_follows_writes_and_finds_chinese(pg_db: TestDatabase) -> None:
    b = PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2, embedder=HashingEmbedder(384))
    await b.open()
    try:
        # Bob holds many strong matches; a filter after ranking would leave Alice with none
        await b.put_many([(BOB, mem(f"zanzibarite zanzibarite crystal {i}"), f"b{i}") for i in range(60)])
        mine = await b.put_many([(ALICE, mem(f"a long note that mentions zanzibarite once among other words {i}"), f"a{i}") for i in range(2)])
        await b.put_many([(ALICE, mem(f"filler memory number {i} about lunch"), f"f{i}") for i in range(60)])
        got = (await b.search(SearchQuery(ScopeSet.of(ALICE), "zanzibarite", limit=5))).hits
        assert {m.id for m in mine} <= {h.memory.id for h in got} and all(h.scope == ALICE for h in got)

        gone = await b.put(ALICE, mem("my locker code is 4471 plover"), idempotency_key="gone")
        edited = await b.put(ALICE, mem("the plover nest is by the pier"), idempotency_key="edited")
        assert await b.delete(ALICE, gone.id)
        await b.update(ALICE, edited.id, MemoryPatch(content="the heron nest is by the pier"))
        assert edited.id in await search_ids(b, ScopeSet.of(ALICE), "heron", limit=3)
        plover = await b.put(ALICE, mem("plover count pending", status=Status.PENDING), idempotency_key="pending")
        assert gone.id not in await search_ids(b, ScopeSet.of(ALICE), "plover 4471", limit=100, statuses=frozenset(Status))
        assert plover.id not in await search_ids(b, ScopeSet.of(ALICE), "plover", limit=100)

        zh = await b.put(ALICE, mem("我爸血压高，每天吃药"), idempotency_key="zh")
        assert (await search_ids(b, ScopeSet.of(ALICE), "血压", limit=1)) == [zh.id]

        for q in ("zanzibarite", "lunch", "血压", "nothing matches this"):
            b.lexical_channel = False
            vector = await search_ids(b, ScopeSet.of(ALICE), q, limit=5)
            b.lexical_channel = True
            assert len(await search_ids(b, ScopeSet.of(ALICE), q, limit=5)) >= len(vector), q
    finally:
        await b.aclose()
