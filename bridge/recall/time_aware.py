"""Time-aware ranking: questions about WHEN something happened are not questions about what is new.

Why: the rank stage multiplies by freshness, so an old memory loses to a newer one of similar
relevance — right for "what do I prefer now", wrong for "when did I run that race?", whose
answer is by nature an older memory. For a question that asks about a time (English or
Chinese wording: "when", "how long ago", "what date", 什么时候, 哪天, 多久, ...), this stage
takes freshness out of the product (its factor becomes 1.0) and gives a memory that itself
states a time ("yesterday", "last weekend", a weekday, a date, 昨天, 上周末, 周六, 3月5日, ...) a
small lift, `TIME_STATED_LIFT`: it is the memory that dates the event.

What it must never do: see a memory the earlier stages did not hand it (it re-orders the
ranked, already authorised hits and nothing else), or change a ranking of a question that does
not ask about time.
"""

from __future__ import annotations

import re

from bridge.recall.context import FACTOR_NAMES, RankedHit

__all__ = ["asks_about_time", "states_a_time", "time_aware", "TIME_STATED_LIFT"]

#: the lift of a memory that states a time, for a question about a time (1.0 = none)
TIME_STATED_LIFT = 1.15
_FRESHNESS = FACTOR_NAMES.index("freshness")  # its place in RankedHit.factors

# Each pattern is its English words (between word boundaries, any case) or its Chinese phrases.
_ASKS_EN = (
    r"when|how long ago|how long since|since when|what (?:date|day|time|year|month|week)|which (?:date|day|year|month|week)"
)
_ASKS_ZH = r"什么时候|哪天|哪一天|多久以前|多久之前|多久|几月|几号|哪年|哪一年|何时|哪个月|啥时候"
_STATES_EN = (
    r"yesterday|today|tonight|this (?:morning|afternoon|evening|week|weekend|month|year)|last (?:night|week|weekend|month|year|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"\d+ (?:days?|weeks?|months?|years?) ago|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]* \d{1,2}|"
    r"\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*|(?:19|20)\d\d"
)
_STATES_ZH = (
    r"昨天|前天|今天|今晚|上周|上个?星期|上个?礼拜|这周|本周|周[一二三四五六日末]|星期[一二三四五六日天]|上个月|去年|前年|"
    r"[0-9一二三四五六七八九十]+月[0-9一二三四五六七八九十]+[日号]|[0-9一二三四五六七八九十]+(?:天|周|个月|年)前"
)
_ASKS = re.compile(rf"\b(?:{_ASKS_EN})\b|{_ASKS_ZH}", re.IGNORECASE)
_STATES = re.compile(rf"\b(?:{_STATES_EN})\b|{_STATES_ZH}", re.IGNORECASE)
# The same tests for ASCII text (most questions, most memories), searched in its lower case: an
# ASCII text holds no Chinese phrase, lower() makes the case-blind match a plain one, and every
# English alternative starts with a word character, so the leading \b is "no word character
# before", which `re` checks only where a match starts instead of at every position. About 2 us
# instead of 15 for a question, 5 us instead of 20 for a memory (tests/bridge/test_time_aware.py
# compares both forms with the patterns as they were).
_ASKS_ASCII = re.compile(rf"(?<!\w)(?:{_ASKS_EN})\b")
_STATES_ASCII = re.compile(rf"(?<!\w)(?:{_STATES_EN})\b")


def asks_about_time(query: str) -> bool:
    """Whether the question asks when something happened (or how long ago)."""
    if query.isascii():
        return _ASKS_ASCII.search(query.lower()) is not None
    return _ASKS.search(query) is not None


def states_a_time(content: str) -> bool:
    """Whether a memory states when something happened (a relative day, a weekday, a date)."""
    if content.isascii():
        return _STATES_ASCII.search(content.lower()) is not None
    return _STATES.search(content) is not None


def time_aware(ranked: list[RankedHit], query: str) -> list[RankedHit]:
    """`ranked` re-ordered for a question about time (see the module docstring); unchanged otherwise.
    Ties keep their incoming order."""
    if not ranked or not asks_about_time(query):
        return ranked
    for r in ranked:
        factors = r.factors
        if len(factors) > _FRESHNESS and factors[_FRESHNESS] > 0.0:
            r.score /= factors[_FRESHNESS]
            r.factors = factors[:_FRESHNESS] + (1.0,) + factors[_FRESHNESS + 1 :]
        if states_a_time(r.hit.memory.content):
            r.score *= TIME_STATED_LIFT
    return sorted(ranked, key=lambda r: -r.score)
