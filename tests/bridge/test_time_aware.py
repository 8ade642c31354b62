"""Time-aware ranking (bridge/recall/time_aware.py): a question about WHEN is not a question about what is new."""

from __future__ import annotations

from adapters.base import Hit, NewMemory, Provenance, StoredMemory
from adapters.scopes import ScopeKey
from bridge.recall.context import RankedHit
from bridge.recall.time_aware import TIME_STATED_LIFT, asks_about_time, states_a_time, time_aware

ALICE = ScopeKey.private("acme", "alice")


def ranked(text: str, semantic: float, freshness: float, n: int) -> RankedHit:
    memory = StoredMemory.from_new(f"m{n}", ALICE, NewMemory(text, "event", Provenance("alice", "assistant", "s1")))
    factors = (semantic, 1.0, 1.0, freshness, 1.0, 1.0)
    return RankedHit(Hit(memory, ALICE, semantic), semantic * freshness, factors)


def test_questions_about_time_are_told_apart_in_english_and_chinese():
    for q in ("When did I run the half marathon?", "how long ago did I move?", "What date was the wedding?", "我是什么时候骨折的？", "我哪天升职的", "搬家是多久以前的事？"):
        assert asks_about_time(q), q
    for q in ("What is my cat called?", "Where do I work now?", "我对什么过敏？", "whenever is fine, what do I like?"):
        assert not asks_about_time(q), q


def test_memories_that_state_a_time_are_recognised():
    for t in ("I ran it yesterday", "we went last weekend", "on Saturday I fell", "back in 2023", "我昨天摔了一跤", "上周末去露营", "3月5日搬家"):
        assert states_a_time(t), t
    assert not states_a_time("I like green tea") and not states_a_time("我喜欢绿茶")


def test_a_when_question_drops_freshness_and_lifts_the_dated_memory():
    old_dated = ranked("I finished the half marathon yesterday", 0.50, 0.8, 1)  # old: freshness at the floor
    new_undated = ranked("a colleague ran a marathon", 0.52, 1.0, 2)
    order = sorted([new_undated, old_dated], key=lambda r: -r.score)
    assert order[0] is new_undated  # plain ranking: the newer, slightly closer memory first
    out = time_aware(order, "When did I run the half marathon?")
    assert out[0] is old_dated and out[0].factors[3] == 1.0
    assert abs(old_dated.score - 0.50 * TIME_STATED_LIFT) < 1e-9


def test_other_questions_are_left_exactly_as_ranked():
    order = [ranked("a colleague ran a marathon", 0.52, 1.0, 2), ranked("I finished the half marathon yesterday", 0.50, 0.8, 1)]
    before = [(r.hit.memory.id, r.score, r.factors) for r in order]
    assert [(r.hit.memory.id, r.score, r.factors) for r in time_aware(order, "Who ran a marathon?")] == before
