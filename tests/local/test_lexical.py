"""The local backend's lexical channel (adapters/local/lexical.py) and its fusion with the vector one.

Guarantees: a lexical match in a scope outside the ScopeSet is never a candidate (bounded
before ranking, so readable matches still fill the limit) and never shapes the scores of
readable ones; forgotten (deleted), edited, expired or non-active memories are not found by
their old words; Chinese is found by its characters; the fusion never returns fewer hits than
the vector channel alone; the index is built for an older store and rebuilt when out of step.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import time

import numpy as np
import pytest

from adapters.base import MemoryPatch, NewMemory, Provenance, SearchQuery, Status
from adapters.local import LocalBackend, lexical
from adapters.local.lexical import terms
from adapters.local.postings import digest_value
from adapters.shared.fusion import fuse
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet
from adapters.shared.embedding import HashingEmbedder

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
OTHER_TENANT = ScopeKey.private("globex", "carol")
PROV = Provenance("alice", "assistant", "s1")


def mem(text: str, **kw) -> NewMemory:
    return NewMemory(content=text, kind="note", provenance=PROV, **kw)


@pytest.fixture
async def store(tmp_path):
    backend = LocalBackend(tmp_path / "store", embedder=HashingEmbedder(384))
    yield backend
    await backend.aclose()


def lexical_ids(store: LocalBackend, scopes: ScopeSet, text: str, limit: int = 10, **kw) -> list[str]:
    ranked = store.search_lexical(scopes, text, limit=limit, **kw)
    return [h.memory.id for h in store.load_hits(ranked)]


async def test_matches_in_unreadable_scopes_never_crowd_out_or_join_readable_ones(store):
    # Bob and another tenant hold many better matches; Alice holds two weaker ones. A filter
    # applied after ranking would return nothing for Alice (the top 2 are Bob's); no filter would return Bob's.
    await store.put_many([(BOB, mem(f"zanzibarite zanzibarite crystal {i}"), f"b{i}") for i in range(40)])
    await store.put_many([(OTHER_TENANT, mem(f"zanzibarite {i}"), f"c{i}") for i in range(40)])
    mine = await store.put_many([(ALICE, mem(f"a long note that mentions zanzibarite once among many other words {i}"), f"a{i}") for i in range(2)])
    await store.put(ALICE, mem("nothing to see here"), idempotency_key="plain")
    only_alice = ScopeSet.of(ALICE)
    assert sorted(lexical_ids(store, only_alice, "zanzibarite", limit=2)) == sorted(m.id for m in mine)
    fused = (await store.search(SearchQuery(only_alice, "zanzibarite crystal", limit=5))).hits
    assert fused and all(h.scope == ALICE for h in fused), [(h.scope, h.memory.content) for h in fused]
    assert {m.id for m in mine} <= {h.memory.id for h in fused}


async def test_other_scopes_words_do_not_change_a_readable_hits_score(store):
    """BM25 statistics are the ScopeSet's own: what another user writes cannot move Alice's scores."""
    await store.put_many([(ALICE, mem(t), f"a{i}") for i, t in enumerate(["quarterly budget review", "budget for the offsite", "team lunch on friday"])])
    before = store.search_lexical(ScopeSet.of(ALICE), "budget offsite", limit=10)
    await store.put_many([(BOB, mem(f"budget budget offsite plan {i}"), f"b{i}") for i in range(30)])
    after = store.search_lexical(ScopeSet.of(ALICE), "budget offsite", limit=10)
    assert before and before == after


async def test_forgotten_edited_and_inactive_memories_are_not_found_by_their_words(store):
    gone = await store.put(ALICE, mem("my locker code is 4471 plover"), idempotency_key="gone")
    edited = await store.put(ALICE, mem("the plover nest is by the pier"), idempotency_key="edited")
    pending = await store.put(ALICE, mem("plover count pending", status=Status.PENDING), idempotency_key="pending")
    assert set(lexical_ids(store, ScopeSet.of(ALICE), "plover")) == {gone.id, edited.id}
    assert await store.delete(ALICE, gone.id)
    await store.update(ALICE, edited.id, MemoryPatch(content="the heron nest is by the pier"))
    assert lexical_ids(store, ScopeSet.of(ALICE), "plover 4471") == []
    assert lexical_ids(store, ScopeSet.of(ALICE), "heron") == [edited.id]
    assert lexical_ids(store, ScopeSet.of(ALICE), "plover", statuses=frozenset(Status)) == [pending.id]
    await store.update(ALICE, pending.id, MemoryPatch(status=Status.FORGOTTEN))
    assert lexical_ids(store, ScopeSet.of(ALICE), "plover") == []
    fused = (await store.search(SearchQuery(ScopeSet.of(ALICE), "plover 4471", limit=10))).hits
    assert gone.id not in {h.memory.id for h in fused}
    # nothing of the deleted memory is left in the index itself
    with sqlite3.connect(store.path / "memories.sqlite3") as db:
        indexed = {r[0] for r in db.execute("SELECT rowid FROM memories_lexical")}
        rows = {r[0] for r in db.execute("SELECT rowid FROM memories")}
    assert indexed == rows


async def test_erasure_and_expiry_keep_rows_out_of_the_lexical_channel(store):
    now = time.time()
    await store.put(ALICE, mem("the sandpiper note expired", expires_at=now - 10), idempotency_key="old")
    live = await store.put(ALICE, mem("the sandpiper note lives"), idempotency_key="live")
    assert lexical_ids(store, ScopeSet.of(ALICE), "sandpiper", now=now) == [live.id]
    assert lexical_ids(store, ScopeSet.of(ALICE), "sandpiper", now=now - 3600) != [live.id]  # before it expired: both


async def test_chinese_is_found_by_its_characters(store):
    await store.put_many([(ALICE, mem(t), f"z{i}") for i, t in enumerate(["我爸血压高，每天吃药", "周末去杭州看西湖", "我对花生过敏", "today I walked the dog"])])
    hits = store.load_hits(store.search_lexical(ScopeSet.of(ALICE), "我父亲的血压怎么样？", limit=3))
    assert hits and hits[0].memory.content == "我爸血压高，每天吃药"
    hits = store.load_hits(store.search_lexical(ScopeSet.of(ALICE), "西湖", limit=3))
    assert [h.memory.content for h in hits] == ["周末去杭州看西湖"]


async def test_an_entry_restricted_to_memory_ids_keeps_only_those(store):
    made = await store.put_many([(ALICE, mem(f"kestrel sighting {i}"), f"k{i}") for i in range(5)])
    only = ScopeSet((ScopeEntry(ALICE, memory_ids=frozenset({made[3].id})),))
    assert lexical_ids(store, only, "kestrel sighting") == [made[3].id]
    bobs = await store.put(BOB, mem("kestrel sighting by bob"), idempotency_key="bk")
    assert lexical_ids(store, ScopeSet((ScopeEntry(ALICE, memory_ids=frozenset({bobs.id})),)), "kestrel") == []  # an id of another scope: nothing


async def test_fusion_never_returns_fewer_hits_than_the_vector_channel(store):
    await store.put_many([(ALICE, mem(t), f"f{i}") for i, t in enumerate(
        ["deploy the api on friday", "the api key rotates monthly", "lunch with the design team", "我们周五发布接口", "budget review", "friday retro notes"])])
    for q in ("deploy api", "friday", "接口发布", "unrelated words entirely", "budget"):
        for limit in (1, 3, 10):
            store.lexical_channel = False
            vector = (await store.search(SearchQuery(ScopeSet.of(ALICE), q, limit=limit))).hits
            store.lexical_channel = True
            fused = (await store.search(SearchQuery(ScopeSet.of(ALICE), q, limit=limit))).hits
            assert len(fused) >= len(vector), (q, limit)
            assert all(h.scope == ALICE for h in fused)


def test_fused_scores_never_increase_down_the_order():
    vector = [(ALICE, 1, 0.9), (ALICE, 2, 0.5), (ALICE, 3, 0.4)]
    lexical = [(ALICE, 3, 12.0), (ALICE, 4, 9.0)]
    fused = fuse(vector, lexical, 10, {4: 0.05})
    assert {r for _, r, _ in fused} == {1, 2, 3, 4}
    scores = [s for _, _, s in fused]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    assert dict((r, s) for _, r, s in fused)[1] >= 0.9  # a hit keeps at least its own similarity


def test_terms_split_chinese_into_characters_and_pairs_and_fold_english():
    assert terms("Shifts at St. Vincent's") == ["shift", "at", "st", "vincent", "s"]
    assert terms("血压高") == ["血", "压", "高", "血压", "压高"]


async def test_an_older_store_and_an_index_out_of_step_are_indexed_at_open(tmp_path):
    path = tmp_path / "store"
    backend = LocalBackend(path, embedder=HashingEmbedder(384))
    made = await backend.put(ALICE, mem("the avocet returned"), idempotency_key="x")
    await backend.aclose()
    with sqlite3.connect(path / "memories.sqlite3") as db:  # what a schema-3 store looks like
        db.execute("DROP TABLE memories_lexical")
        db.execute("DROP TABLE lexical_scopes")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    backend = LocalBackend(path, embedder=HashingEmbedder(384))
    assert lexical_ids(backend, ScopeSet.of(ALICE), "avocet") == [made.id]
    await backend.aclose()
    with sqlite3.connect(path / "memories.sqlite3") as db:  # an index that lost a row
        db.execute("DELETE FROM memories_lexical")
    backend = LocalBackend(path, embedder=HashingEmbedder(384))
    try:
        assert lexical_ids(backend, ScopeSet.of(ALICE), "avocet") == [made.id]
    finally:
        await backend.aclose()


async def test_a_rare_word_outranks_words_every_row_holds(store):
    await store.put_many([(ALICE, mem(f"the common word and filler {i}"), f"c{i}") for i in range(20)])
    rare = await store.put(ALICE, mem("the common word and the curlew"), idempotency_key="rare")
    assert lexical_ids(store, ScopeSet.of(ALICE), "the common curlew", limit=3)[0] == rare.id
    # a question made only of words every row holds still ranks every row of the scope, and only those
    await store.put(BOB, mem("the common word"), idempotency_key="bob")
    everything = lexical_ids(store, ScopeSet.of(ALICE), "the common word", limit=30)
    assert len(everything) == 21
    for limit in (1, 5, 20):  # a cut through rows of equal score keeps the full order's first rows
        assert lexical_ids(store, ScopeSet.of(ALICE), "the common word", limit=limit) == everything[:limit]


async def test_the_postings_follow_writes_here_and_by_another_process(store, tmp_path):
    """Each partition keeps its rows' words in memory: rows appended here are indexed by the next
    search, a delete or an edit here or through another connection is seen at once."""
    kestrels = await store.put_many([(ALICE, mem(f"a kestrel over the field {i}"), f"k{i}") for i in range(3)])
    assert len(lexical_ids(store, ScopeSet.of(ALICE), "kestrel")) == 3
    more = await store.put_many([(ALICE, mem(f"another kestrel {i}"), f"more{i}") for i in range(3)])
    assert set(lexical_ids(store, ScopeSet.of(ALICE), "kestrel")) == {m.id for m in kestrels + more}
    await store.update(ALICE, more[0].id, MemoryPatch(status=Status.FORGOTTEN))
    assert more[0].id not in lexical_ids(store, ScopeSet.of(ALICE), "kestrel")
    assert await store.delete(ALICE, kestrels[0].id)  # a removal moves the last row into its place
    plover = await store.put(ALICE, mem("a plover on the shore"), idempotency_key="plover")  # same row count as before
    assert set(lexical_ids(store, ScopeSet.of(ALICE), "kestrel")) == {m.id for m in kestrels[1:] + more[1:]}
    assert lexical_ids(store, ScopeSet.of(ALICE), "plover") == [plover.id]
    other = LocalBackend(tmp_path / "store", embedder=HashingEmbedder(384))
    try:
        merlins = await other.put_many([(ALICE, mem(f"a merlin {i}"), f"m{i}") for i in range(2)])
        assert set(lexical_ids(store, ScopeSet.of(ALICE), "merlin")) == {m.id for m in merlins}
        await other.update(ALICE, merlins[0].id, MemoryPatch(content="a hobby falcon"))
        assert lexical_ids(store, ScopeSet.of(ALICE), "merlin") == [merlins[1].id]
        assert lexical_ids(store, ScopeSet.of(ALICE), "hobby") == [merlins[0].id]
        assert await other.delete(ALICE, merlins[1].id)
        assert lexical_ids(store, ScopeSet.of(ALICE), "merlin") == []
    finally:
        await other.aclose()


async def test_lexical_candidates_are_exactly_the_readable_rows_holding_a_query_word_after_every_step(store, tmp_path):
    """An oracle over random puts, forgets, edits, deletes and expiries, by this store and by
    another connection: after every step the lexical channel finds exactly the active, unexpired
    rows of the ScopeSet whose text holds a query word, as read from SQLite by brute force."""
    import random

    rng = random.Random(7)
    words = ["avocet", "bittern", "curlew", "dunlin", "egret", "fulmar"]
    other = LocalBackend(tmp_path / "store", embedder=HashingEmbedder(384))
    live: dict[str, ScopeKey] = {}
    try:
        for step in range(80):
            writer = store if rng.random() < 0.6 else other
            action = rng.choice(["put", "put", "put", "forget", "edit", "delete", "expire"])
            scope = rng.choice([ALICE, BOB])
            if action == "put" or not live:
                text = " ".join(rng.sample(words, 2)) + f" note {step}"
                made = await writer.put(scope, mem(text), idempotency_key=f"s{step}")
                live[made.id] = scope
            else:
                mid = rng.choice(sorted(live))
                where = live[mid]
                if action == "forget":
                    await writer.update(where, mid, MemoryPatch(status=Status.FORGOTTEN))
                    del live[mid]
                elif action == "edit":
                    await writer.update(where, mid, MemoryPatch(content=" ".join(rng.sample(words, 2)) + f" edited {step}"))
                elif action == "expire":  # a row that has already expired: present in SQLite, never found
                    await writer.put(where, mem(" ".join(rng.sample(words, 2)) + f" expired {step}", expires_at=time.time() - 1), idempotency_key=f"x{step}")
                else:
                    assert await writer.delete(where, mid)
                    del live[mid]
            query = " ".join(rng.sample(words, 2))
            wanted = set(terms(query))
            with sqlite3.connect(store.path / "memories.sqlite3") as db:
                rows = db.execute("SELECT id, scope, content FROM memories WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)", (time.time(),)).fetchall()
            for scopes in (ScopeSet.of(ALICE), ScopeSet.of(BOB), ScopeSet.of(ALICE, BOB)):
                readable = {str(e.key) for e in scopes}
                truth = {mid for mid, scope_text, content in rows if scope_text in readable and wanted & set(terms(content))}
                assert set(lexical_ids(store, scopes, query, limit=200)) == truth, (step, action, query)
    finally:
        await other.aclose()


def test_postings_leave_out_a_stored_row_of_any_other_shape_and_count_repeats():
    """The postings are parsed from the index's stored `<tag>x<12 hex>` tokens by fixed stride: a
    token of another shape (another scope's tag, a bad digit) is ignored, and a row that cannot be
    cut into tokens of that width (a torn token, non-ASCII) is left out whole, never read shifted
    into wrong digests."""
    from adapters.local.postings import Postings, digest_value

    good = "7xaaaaaaaaaaaa 7xbbbbbbbbbbbb 7xaaaaaaaaaaaa"
    rows = [(0, good), (1, "8xaaaaaaaaaaaa"), (2, "7xaaaaaaaaaaaz"), (3, "7xaaaaaaaaaaa"), (4, "7xaaaaaaaaaaaé"), (5, "")]
    postings = Postings.build(0, 6, 7, rows)
    positions, counts = postings.lookup(digest_value("aaaaaaaaaaaa"))
    assert positions.tolist() == [0] and counts.tolist() == [2.0]
    assert postings.lookup(digest_value("bbbbbbbbbbbb"))[0].tolist() == [0]
    assert len(postings.digests) == 2  # nothing of rows 1-5
    assert postings.lengths.tolist() == [3.0, 1.0, 1.0, 0.0, 0.0, 0.0]  # an ignored token still counts in its row's length


def test_the_plural_stemmer_is_harmans_s_stemmer_for_any_word():
    """The stemmer returns early for a word without a final "s"; the index's stored terms depend
    on it, so it must stem every word exactly as the rules written out in full do."""
    import random

    from adapters.local.lexical import _stem

    rules = (("ies", ("eies", "aies"), "y"), ("es", ("aes", "ees", "oes"), "e"), ("s", ("us", "ss"), ""))  # suffix, unless, becomes

    def harman(word: str) -> str:  # the first rule that applies, as a table
        if len(word) > 3 and word.isascii():
            for suffix, unless, becomes in rules:
                if word.endswith(suffix) and not word.endswith(unless):
                    return word[: -len(suffix)] + becomes
        return word

    rng = random.Random(3)
    words = ["shifts", "ponies", "goes", "bus", "glass", "toes", "eies", "aies", "cafés", "series", "yes", "s"]
    words += ["".join(rng.choice("aeiosuy血") for _ in range(rng.randint(0, 7))) for _ in range(20000)]
    assert [_stem(w) for w in words] == [harman(w) for w in words]


def test_term_digests_stay_the_6_byte_blake2b_of_the_term_that_stores_already_hold() -> None:
    """Stores on disk hold `<tag>x<digest>` tokens written by earlier code; a question's probes
    must be those very digests (a changed hash would find nothing in an existing index, and
    `in_step` compares rows, not digests, so no rebuild would mend it)."""
    for term in ("about", "t21", "血压", "x" * 300, "\udcff", ""):
        plain = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=6)
        assert lexical._digest(term) == plain.hexdigest() == f"{int.from_bytes(plain.digest(), 'big'):012x}"
    probes = lexical.query_probes("Curlews about 血压")
    wanted = sorted(int(lexical._digest(t), 16) for t in set(lexical.terms("Curlews about 血压")))
    assert probes.tolist() == wanted + [d + 1 for d in wanted]


def test_query_probes_are_the_plain_formulation_for_any_question() -> None:
    """`query_probes` reads its digests as bytes (sorted as bytes, padded to 8-byte big-endian
    integers, read by numpy at once); the plain formulation is integers: each distinct term's
    digest value (the first MAX_QUERY_TERMS terms), sorted, then each plus one, as uint64."""
    rng = random.Random(11)
    alphabet = "ab cdesXZ 血压西湖 é1 #-?"
    questions = ["", "...", "about", "about about abouts", " ".join(f"w{i}" for i in range(40)), "Curlews about 血压", "\udcff x"]
    questions += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    for question in questions:
        distinct = list(dict.fromkeys(lexical.terms(question)))[: lexical.MAX_QUERY_TERMS]
        wanted = sorted({digest_value(lexical._digest(t)) for t in distinct})
        probes = lexical.query_probes(question)
        assert probes.dtype == np.uint64 and probes.dtype.isnative, question
        assert probes.tolist() == wanted + [d + 1 for d in wanted], question
