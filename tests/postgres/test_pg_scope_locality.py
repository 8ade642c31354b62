"""The PostgreSQL backend's per-scope layout: the covering index of the vector channel
(adapters/postgres/locality.py) and the scope-tagged lexemes of the lexical channel with their
candidate budget (adapters/postgres/lexical.py).

Guarantees: exact top-k stays exact through every branch (indexed scopes, scope keys too long for
the index, an entry's memory ids); a stored lexeme names its scope, so another scope's postings
are never matched, counted or ranked: what Bob writes never changes which of Alice's words are
looked up nor how her hits rank; the budget leaves words too common to tell rows apart to the
vector channel; a store migrated by the previous release is upgraded in place.
"""

from __future__ import annotations

import numpy as np
import pytest

import adapters.postgres.backend as pg_backend
from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery
from adapters.postgres import PostgresBackend
from adapters.postgres.lexical import MAX_CANDIDATES, scope_tag
from adapters.postgres.locality import MAX_SCOPE_BYTES
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder
from contract_tests.postgres_server import TestDatabase
from tests.postgres.pgkit import connect

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
#: a scope key longer than the covering index takes (3-byte characters: 128 of them per id)
LONG = ScopeKey.private("語" * 128, "語" * 128)
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV)


async def opened(db: TestDatabase, dim: int = 384) -> PostgresBackend:
    b = PostgresBackend(db.app_url, migrate_url=db.owner_url, pool_size=2, embedder=HashingEmbedder(dim))
    await b.open()
    return b


async def lexical_ids(b: PostgresBackend, scopes: ScopeSet, text: str) -> list[tuple[str, float]]:
    vector = (await b._embed([text]))[0]
    return [(h.memory.id, h.score) for h in await b.search_lexical(SearchQuery(scopes, text, limit=10), vector)]


def test_long_scope_key_is_longer_than_the_index_takes() -> None:
    assert len(str(LONG).encode()) > MAX_SCOPE_BYTES


async def test_vector_search_is_exact_through_every_branch(pg_db: TestDatabase) -> None:
    b = await opened(pg_db)
    try:
        stored = []
        for scope, label in ((ALICE, "ali"), (BOB, "bob"), (LONG, "語語語")):
            stored += await b.put_many([(scope, mem(f"{label} note {i} about topic {i % 7}"), f"{i}") for i in range(40)])
        vectors = {m.id: v for m, v in zip(stored, await b._embed([m.content for m in stored]))}
        with connect(pg_db.owner_url) as conn:
            assert conn.execute("SELECT to_regclass('memories_scope_vectors')").fetchone() != (None,)
        restricted = frozenset(m.id for m in stored if m.scope == BOB and int(m.content.split()[2]) % 3 == 0)
        scopes = ScopeSet((ScopeEntry(ALICE), ScopeEntry(LONG), ScopeEntry(BOB, memory_ids=restricted)))
        for text in ("topic 3", "ali note 5", "語語語 note 12", "about topic 6"):
            query = (await b._embed([text]))[0]
            permitted = [m for m in stored if m.scope in (ALICE, LONG) or m.id in restricted]
            truth = sorted(permitted, key=lambda m: (-float(np.dot(vectors[m.id].astype(np.float64), query)), m.id))[:10]
            got = await b.search_vector(scopes, query, limit=10)
            assert [h.memory.id for h in got] == [m.id for m in truth] or sorted(round(h.score, 5) for h in got) == sorted(
                round(float(np.dot(vectors[m.id], query)), 5) for m in truth), text  # equal scores may swap
            assert {h.memory.scope for h in got} <= {ALICE, LONG, BOB} and all(h.memory.id in restricted for h in got if h.memory.scope == BOB)
    finally:
        await b.aclose()


async def test_large_vectors_get_no_covering_index_and_search_stays_exact(pg_db: TestDatabase) -> None:
    b = await opened(pg_db, dim=768)
    try:
        stored = await b.put_many([(ALICE, mem(f"note {i}"), f"{i}") for i in range(20)])
        with connect(pg_db.owner_url) as conn:
            assert conn.execute("SELECT to_regclass('memories_scope_vectors')").fetchone() == (None,)
        query = (await b._embed(["note 7"]))[0]
        got = await b.search_vector(ScopeSet.of(ALICE), query, limit=1)
        assert [h.memory.id for h in got] == [stored[7].id]
    finally:
        await b.aclose()


async def test_stored_lexemes_and_postings_name_their_scope(pg_db: TestDatabase) -> None:
    b = await opened(pg_db)
    try:
        a, _ = await b.put_many([(ALICE, mem("zanzibarite crystal"), "a"), (BOB, mem("zanzibarite zanzibarite"), "b")])
        with connect(pg_db.owner_url) as conn:  # the postings' policy binds the runtime role only
            posted = "SELECT scope FROM memory_postings WHERE term = %s ORDER BY scope"
            assert conn.execute(posted, (f"{scope_tag(str(ALICE))}:zanzibarite",)).fetchall() == [(str(ALICE),)]
            assert conn.execute(posted, (f"{scope_tag(str(BOB))}:zanzibarite",)).fetchall() == [(str(BOB),)]
            assert conn.execute(posted, ("zanzibarite",)).fetchall() == []
            terms = {t for (t,) in conn.execute("SELECT term FROM memory_postings WHERE memory_id = %s", (a.id,))}
            assert terms == {f"{scope_tag(str(ALICE))}:zanzibarite", f"{scope_tag(str(ALICE))}:crystal"}
        await b.update(ALICE, a.id, MemoryPatch(content="heron"))
        assert await b.delete(ALICE, a.id) is True
        with connect(pg_db.owner_url) as conn:
            assert conn.execute("SELECT count(*) FROM memory_postings WHERE memory_id = %s", (a.id,)).fetchone() == (0,)
        with connect(pg_db.app_url) as conn:  # the runtime role sees no posting of an undeclared scope
            assert conn.execute("SELECT count(*) FROM memory_postings").fetchone() == (0,)
    finally:
        await b.aclose()


async def test_another_scopes_postings_never_change_which_words_are_looked_up_or_how_hits_rank(pg_db: TestDatabase) -> None:
    """Alice holds a word in 3 memories; Bob then writes it into more than the whole budget. Were
    Bob's postings counted, the word would be dropped as too common and Alice's hits would go."""
    b = await opened(pg_db)
    try:
        mine = await b.put_many([(ALICE, mem(f"heliotrope seeds in drawer {i}" + " heliotrope" * i), f"h{i}") for i in range(3)])
        await b.put_many([(ALICE, mem(f"filler about lunch {i}"), f"f{i}") for i in range(30)])
        before = await lexical_ids(b, ScopeSet.of(ALICE), "heliotrope drawer")
        assert {i for i, _ in before} == {m.id for m in mine}
        await b.put_many([(BOB, mem(f"heliotrope drawer heliotrope {i}"), f"b{i}") for i in range(MAX_CANDIDATES + 50)])
        assert await lexical_ids(b, ScopeSet.of(ALICE), "heliotrope drawer") == before
        # and Bob's own search sees his word as too common: left to the vector channel
        assert await lexical_ids(b, ScopeSet.of(BOB), "heliotrope") == []
    finally:
        await b.aclose()


async def test_budget_keeps_the_rare_words_and_leaves_common_ones_to_the_vector_channel(pg_db: TestDatabase) -> None:
    b = await opened(pg_db)
    try:
        await b.put_many([(ALICE, mem(f"weekly status meeting notes {i}"), f"c{i}") for i in range(MAX_CANDIDATES + 10)])
        rare = await b.put_many([(ALICE, mem(f"status meeting moved to quetzal room {i}"), f"r{i}") for i in range(2)])
        got = await lexical_ids(b, ScopeSet.of(ALICE), "status meeting quetzal")
        assert [i for i, _ in got] and {i for i, _ in got} == {m.id for m in rare}  # `status`, `meeting`: too common
        assert await lexical_ids(b, ScopeSet.of(ALICE), "weekly status meeting") == []
        hits = (await b.search(SearchQuery(ScopeSet.of(ALICE), "weekly status meeting", limit=5))).hits
        assert len(hits) == 5  # the vector channel still answers
    finally:
        await b.aclose()


async def test_counts_and_candidates_honour_an_entry_restricted_to_memory_ids(pg_db: TestDatabase) -> None:
    b = await opened(pg_db)
    try:
        rows = await b.put_many([(BOB, mem(f"ocelot sighting {i}"), f"o{i}") for i in range(5)])
        scopes = ScopeSet((ScopeEntry(ALICE), ScopeEntry(BOB, memory_ids=frozenset({rows[2].id}))))
        assert [i for i, _ in await lexical_ids(b, scopes, "ocelot")] == [rows[2].id]
    finally:
        await b.aclose()


async def test_a_store_of_the_previous_release_is_upgraded_in_place(pg_db: TestDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Migrations 5 and 6 on a store that already holds rows: the index is built and every old
    row's lexemes are re-tagged by scope (found lexically afterwards, by its own scope only)."""
    monkeypatch.setattr(pg_backend, "MEMORY_MIGRATIONS", pg_backend.MEMORY_MIGRATIONS[:4])
    old = await opened(pg_db)
    try:
        kept = await old.put(ALICE, mem("the axolotl tank needs a filter"), idempotency_key="k")
        await old.put(BOB, mem("axolotl axolotl"), idempotency_key="k")
    finally:
        await old.aclose()
    monkeypatch.undo()
    b = await opened(pg_db)
    try:
        with connect(pg_db.owner_url) as conn:
            assert conn.execute("SELECT max(version) FROM schema_version WHERE component = 'memories'").fetchone() == (6,)
            assert conn.execute("SELECT to_regclass('memories_scope_vectors')").fetchone() != (None,)
        assert [i for i, _ in await lexical_ids(b, ScopeSet.of(ALICE), "axolotl")] == [kept.id]
        query = (await b._embed(["the axolotl tank needs a filter"]))[0]
        assert [h.memory.id for h in await b.search_vector(ScopeSet.of(ALICE), query, limit=1)] == [kept.id]
    finally:
        await b.aclose()


async def test_within_the_budget_the_ranking_is_the_untagged_one(pg_db: TestDatabase) -> None:
    """Where no word is dropped, tagging changes nothing: the same rows, in the order `ts_rank`
    gives the untagged text (what the channel returned before lexemes were tagged)."""
    b = await opened(pg_db)
    try:
        words = ["otter", "kelp", "harbour", "tide", "gull"]
        await b.put_many([(ALICE, mem(" ".join(words[j] for j in range(5) if (i >> j) & 1 or j == i % 5) + f" log {i}"), f"o{i}") for i in range(40)])
        await b.put_many([(BOB, mem("otter otter kelp"), f"b{i}") for i in range(10)])
        text = "otter kelp tide"
        got = [i for i, _ in await lexical_ids(b, ScopeSet.of(ALICE), text)]
        with connect(pg_db.app_url) as conn, conn.transaction():
            conn.execute("SELECT set_config('viking_bridge.scopes', %s, true)", (str(ALICE),))
            expected = [r[0] for r in conn.execute(
                "SELECT id FROM memories, to_tsquery('simple', 'otter | kelp | tide') q WHERE to_tsvector('simple', content) @@ q"
                " ORDER BY ts_rank(to_tsvector('simple', content), q) DESC, seq LIMIT 50").fetchall()]
        assert len(expected) < MAX_CANDIDATES and got == expected
    finally:
        await b.aclose()
