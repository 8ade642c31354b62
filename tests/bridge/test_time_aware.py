"""Time-aware ranking (bridge/recall/time_aware.py): a question about WHEN is not a question about what is new."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

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


# The two patterns as they were before ASCII text got its own lower-case search: the reference the
# fast form must agree with on every text (tests of what a pattern means are above).
_ASKS_BEFORE = re.compile(
    r"\bwhen\b|\bhow long ago\b|\bhow long since\b|\bsince when\b|\bwhat (?:date|day|time|year|month|week)\b|\bwhich (?:date|day|year|month|week)\b"
    r"|什么时候|哪天|哪一天|多久以前|多久之前|多久|几月|几号|哪年|哪一年|何时|哪个月|啥时候",
    re.IGNORECASE,
)
_STATES_BEFORE = re.compile(
    r"\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening|week|weekend|month|year)|last (?:night|week|weekend|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"\d+ (?:days?|weeks?|months?|years?) ago|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]* \d{1,2}|"
    r"\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*|(?:19|20)\d\d)\b"
    r"|昨天|前天|今天|今晚|上周|上个?星期|上个?礼拜|这周|本周|周[一二三四五六日末]|星期[一二三四五六日天]|上个月|去年|前年|[0-9一二三四五六七八九十]+月[0-9一二三四五六七八九十]+[日号]|[0-9一二三四五六七八九十]+(?:天|周|个月|年)前",
    re.IGNORECASE,
)
# pieces that make the patterns match, almost match and miss: glued with spaces, punctuation or
# nothing, in any case; plus characters whose case folding reaches an ASCII letter (ſ, K, ı, İ)
_PIECES = (
    "when", "whenever", "how long ago", "how long since", "since when", "what date", "what day", "what days", "which year",
    "which", "yesterday", "today", "tonight", "this week", "this weekend", "last night", "last sunday", "on monday",
    "3 days ago", "12 weeks ago", "1 year ago", "jan 5", "January 12", "sept 3", "5 dec", "14 october", "2023", "1999",
    "20234", "x2023", "2023x", "a", "I", "ran", "_", "-", "'", "?", "!", "\n", "\t", "0", "42", "ſince when", "Kelvin", "ı", "İ",
    "什么时候", "多久", "昨天", "上周末", "3月5日", "周六", "绿茶",
)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(("", " ", "  ", ", ", ".", "-", "\n")), st.booleans()), max_size=8), st.text(max_size=12))
def test_time_patterns_answer_as_they_did_before_their_ascii_fast_form(parts: list[tuple[str, str, bool]], noise: str) -> None:
    text = "".join((piece.upper() if upper else piece) + glue for piece, glue, upper in parts)
    for candidate in (text, text + noise, noise + text, noise):
        assert asks_about_time(candidate) == (_ASKS_BEFORE.search(candidate) is not None), candidate
        assert states_a_time(candidate) == (_STATES_BEFORE.search(candidate) is not None), candidate
