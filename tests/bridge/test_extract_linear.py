"""The rule extractor stays linear on attacker-controlled text, keeps its
behaviour on ordinary text, and is safe to run in worker threads.

Linearity is shown three ways, none by a wall-clock threshold:
- structurally: every rule pattern has a bounded match width (checked with the regex parser) and
  every regex call sees a bounded window (checked by counting the calls and the text they see);
- by comparison with a linear peer measured in the same run, on adversarial texts generated
  from every pattern (near-miss phrases, runs of the characters the patterns loop on);
- behaviour: a differential property test against the pre-fix extractor on short texts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.capture import extract
from bridge.capture.segment import sentences
from bridge.capture.extract import WINDOW_CHARS, Candidate, RuleExtractor, search_windows
from bridge.results import Message
from bridge.vocabulary import Kind

try:  # the regex parser that tells a pattern's match width
    from re import _parser as sre_parse  # type: ignore[attr-defined]  # Python >= 3.11
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

MAX_PATTERN_WIDTH = 64  # no rule needs longer literal evidence than this


def _patterns() -> Iterator[tuple[Kind, Any]]:
    for rule in extract._RULES:
        for pattern in rule.anywhere:
            yield rule.kind, pattern
        for head, tail in rule.ordered:
            yield rule.kind, head
            yield rule.kind, tail


def _user(*contents: str) -> list[Message]:
    return [Message(role="user", content=c, message_id=f"m{i}") for i, c in enumerate(contents)]


# -- the reference: the same segmenter and rules, each pattern searched whole (no windows) ------

def _whole_holds(rule: Any, text: str) -> bool:
    if any(p.regex.search(text) for p in rule.anywhere):
        return True
    for head, tail in rule.ordered:
        first = head.regex.search(text)
        if first is not None and tail.regex.search(text, first.end()):
            return True
    return False


def _reference_extract(messages: list[Message]) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        for text in sentences(message.content):
            if len(text) < extract.MIN_SENTENCE_CHARS:
                continue
            for rule in extract._RULES:
                if _whole_holds(rule, text):
                    if text not in seen:
                        seen.add(text)
                        out.append(Candidate(rule.kind, text, message.message_id, index))
                    break
    return out


# -- structure: bounded widths, bounded windows ---------------------------------------------------

def test_every_rule_pattern_has_a_bounded_match_width():
    """A pattern whose match can span unboundedly many characters (`.*`) is what backtracks."""
    for kind, pattern in _patterns():
        low, high = sre_parse.parse(pattern.regex.pattern, pattern.regex.flags).getwidth()
        assert high < sre_parse.MAXREPEAT, f"{kind.value}: {pattern.regex.pattern} has an unbounded match width"
        assert high <= pattern.width <= MAX_PATTERN_WIDTH, (kind.value, pattern.regex.pattern, high, pattern.width)


@given(length=st.integers(0, 5000), pos=st.integers(0, 5000), width=st.integers(0, MAX_PATTERN_WIDTH))
def test_search_windows_cover_every_start_and_stay_bounded(length: int, pos: int, width: int):
    windows = list(search_windows(length, pos, width))
    starts = [start for start, _ in windows]
    assert starts == list(range(pos, length, WINDOW_CHARS))  # every match start examined once
    for start, end in windows:
        assert start < end <= length
        assert end - start <= WINDOW_CHARS + width + 1
        assert end == length or end - start == WINDOW_CHARS + width + 1  # a match starting here is seen whole


class _CountingRegex:
    """Stands in for a compiled pattern and records the text each search call may look at."""

    def __init__(self, regex: re.Pattern[str], calls: list[tuple[int, int, int]], width: int) -> None:
        self.regex, self.calls, self.width = regex, calls, width
        self.pattern, self.flags = regex.pattern, regex.flags

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        end = len(text) if endpos is None else min(endpos, len(text))
        self.calls.append((pos, end, self.width))
        return self.regex.search(text, pos, end)


def _counting_rules(calls: list[tuple[int, int, int]]) -> tuple[Any, ...]:
    def wrap(p: Any) -> Any:
        return dataclasses.replace(p, regex=_CountingRegex(p.regex, calls, p.width))

    return tuple(
        dataclasses.replace(
            rule,
            anywhere=tuple(wrap(p) for p in rule.anywhere),
            ordered=tuple((wrap(h), wrap(t)) for h, t in rule.ordered),
        )
        for rule in extract._RULES
    )


def test_attacker_cannot_make_one_regex_call_see_more_than_a_window(monkeypatch):
    """Counting, not timing: each call sees at most WINDOW_CHARS + width + 1 characters, and all
    calls together see at most (patterns x (1 + overlap)) times the input: linear in the input,
    and with bounded-width patterns each character seen costs a bounded amount of engine work."""
    calls: list[tuple[int, int, int]] = []
    monkeypatch.setattr(extract, "_RULES", _counting_rules(calls))
    attack = ("to test " * 20_000)[:150_000]  # one sentence, the pre-fix procedure attack
    RuleExtractor().extract(_user(attack, "我在" * 40_000, "i really " * 15_000))
    total_input = len(attack) + 80_000 + len("i really ") * 15_000
    assert calls
    for pos, end, width in calls:
        assert end - pos <= WINDOW_CHARS + width + 1
    patterns = sum(1 for _ in _patterns())
    overlap = 1 + (MAX_PATTERN_WIDTH + 1) / WINDOW_CHARS
    assert sum(end - pos for pos, end, _ in calls) <= patterns * overlap * total_input


def test_an_ordered_head_that_starts_first_also_ends_first():
    """`_Rule.ordered` searches for the tail after the *first* head match only; that is exact
    only if no head phrase occurs inside another at a later start (so it would end earlier)."""
    for rule in extract._RULES:
        for head, _ in rule.ordered:
            assert head.phrases
            for outer in head.phrases:
                for inner in head.phrases:
                    assert inner.lower() not in outer.lower()[1:], (outer, inner)


# -- behaviour: same answers as before, on any short text ------------------------------------------

_TOKENS = [
    " ", "  ", ".", "。", "!", "？", "\n", ",", ":", "：", "x", "a", "an", "I", "i", "İ", "to", "To ", "run", "use",
    "used", "test", "build", "deploy", "the command is", "we", "have", "decided", "decision:", "will", "'ll",
    "prefer", "like", "love", "really", "hate", "dislike", "please always", "'d rather", "am", "'m", "my name is",
    "work", "at", "on", "in", "remember that", "note that", "fyi", "fyix", "我", "在", "工作", "负责", "我们决定",
    "决定采用", "决定使用", "架构决策", "喜欢", "偏好", "习惯", "更", "不", "请总是", "是", "叫", "的名字",
    "运行命令", "用命令", "步骤是", "记住", "请记得", "注意", "Ｒ", "_", "9",
]
_texts = st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=st.lists(_texts, min_size=1, max_size=4), roles=st.lists(st.sampled_from(["user", "assistant", "system"]), min_size=4, max_size=4),
       window=st.sampled_from([WINDOW_CHARS, 1, 3, 7]))
def test_windowed_extraction_matches_whole_pattern_search_on_short_texts(contents, roles, window):
    """Windowed search gives every answer a whole-text search gives, also with tiny windows so
    that matches straddle window edges."""
    messages = [Message(role=r, content=c, message_id=f"m{i}") for i, (r, c) in enumerate(zip(roles, contents))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(extract, "WINDOW_CHARS", window)
        assert RuleExtractor().extract(messages) == _reference_extract(messages)


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from("to testuserunx 我在工作.。"), max_size=120), pos=st.integers(0, 130), window=st.integers(1, 9))
def test_windowed_search_finds_the_same_leftmost_match_as_a_whole_search(text, pos, window):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(extract, "WINDOW_CHARS", window)
        for _, pattern in _patterns():
            whole = pattern.regex.search(text, pos)
            windowed = extract._search(pattern, text, pos)
            assert (whole and whole.span()) == (windowed and windowed.span()), (pattern.regex.pattern, text, pos)


@settings(max_examples=300, deadline=None)
@given(contents=st.lists(st.text(max_size=300) | _texts, min_size=1, max_size=4))
def test_extraction_of_any_text_never_raises_and_only_quotes_the_user(contents):
    messages = [Message(role="user" if i % 2 == 0 else "assistant", content=c, message_id=f"m{i}") for i, c in enumerate(contents)]
    by_id = {m.message_id: m for m in messages}
    for candidate in RuleExtractor().extract(messages):
        source = by_id[candidate.message_id]
        assert source.role == "user"
        assert candidate.content and candidate.content in source.content
        assert candidate.content == candidate.content.strip()
        assert isinstance(candidate.kind, Kind)


def test_ordinary_sentences_keep_their_kinds():
    got = RuleExtractor().extract(_user(
        "To deploy the service, use `make deploy`. We decided to ship on Monday. I really like dark mode! "
        "My name is Ada. FYI the build is red. 我在北京的公司工作。我们决定使用 Postgres。to test it there is no command."
    ))
    assert [(c.kind, c.content) for c in got] == [
        (Kind.PROCEDURE, "To deploy the service, use `make deploy`."),
        (Kind.DECISION, "We decided to ship on Monday."),
        (Kind.PREFERENCE, "I really like dark mode!"),
        (Kind.PROFILE, "My name is Ada."),
        (Kind.FACT, "FYI the build is red."),
        (Kind.PROFILE, "我在北京的公司工作。"),
        (Kind.DECISION, "我们决定使用 Postgres。"),
    ]


# -- scaling against a linear peer, on adversarial texts generated from every pattern -----------

_PEER = re.compile(r"\b(?:zq|qz)\b")  # a bounded literal scan over the same text: linear by construction
_TERMINATORS = set("。！？!?.\n")


def _adversarial_units() -> dict[str, str]:
    """Repeating units that keep a pattern almost matching everywhere: each phrase cut short,
    each phrase spoiled at its end, each head without its tail (the pre-fix attack) and with a
    near-miss tail, and runs of every character the patterns are made of."""
    units: dict[str, str] = {"procedure head, no tail": "to test ", "profile gap": "我在" + "x" * 13}
    chars: set[str] = set()
    for kind, pattern in _patterns():
        for phrase in pattern.phrases:
            chars.update(phrase)
            units[f"{kind.value}: {phrase!r} cut"] = phrase[:-1] + " "
            units[f"{kind.value}: {phrase!r} spoiled"] = phrase + "x "
    for rule in extract._RULES:
        for head, tail in rule.ordered:
            for h in head.phrases:
                units[f"{rule.kind.value}: {h!r} alone"] = h + " "
                for t in tail.phrases:
                    units[f"{rule.kind.value}: {h!r} then {t[:-1]!r}"] = f"{h} {t[:-1]} "
    chars.update("我在 ")
    for char in sorted(chars - _TERMINATORS):
        units[f"run of {char!r}"] = char
    return units


def _fill(unit: str, length: int) -> str:
    """Whole units only: a cut-off unit could complete a phrase at the end and end the search early."""
    return unit * max(1, length // len(unit))


def _cpu_seconds(fn: Any, arg: Any, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn(arg)
        best = min(best, time.process_time() - start)
    return max(best, 1e-7)


def _growth(unit: str, small: int, factor: int) -> tuple[float, float]:
    """How much longer extraction and the peer take when the adversarial text grows `factor` times."""
    extractor = RuleExtractor()
    short, long_ = _fill(unit, small), _fill(unit, small * factor)
    ours = _cpu_seconds(extractor.extract, _user(long_)) / _cpu_seconds(extractor.extract, _user(short))
    peer = _cpu_seconds(_PEER.search, long_) / _cpu_seconds(_PEER.search, short)
    return ours, peer


def test_attacker_cannot_make_extraction_superlinear():
    """Eight times the text may cost at most about eight times the time, as for the linear peer.

    Quadratic growth would be 64x against the peer's ~8x; the bound allows 3x the peer's
    growth so a noisy shared machine does not fail it, and a suspect unit is measured again."""
    factor, slack = 8, 3.0
    worst: list[tuple[float, str]] = []
    for name, unit in _adversarial_units().items():
        for attempt in range(3):
            ours, peer = _growth(unit, 2_000, factor)
            if ours <= slack * max(peer, 1.0):
                break
        else:
            worst.append((ours / peer, name))
    assert not worst, f"superlinear growth (ours / peer) on: {sorted(worst, reverse=True)[:5]}"


def test_the_pre_fix_attack_is_now_cheap_relative_to_an_ordinary_text():
    """The issue's attack (runs of a procedure head with no tail) costs about what plain prose
    of the same length costs, where before it cost ~100x more."""
    extractor = RuleExtractor()
    attack = _user(_fill("to test ", 8_000))
    prose = _user(_fill("lorem ipsum dolor sit amet ", 8_000))
    ratio = _cpu_seconds(extractor.extract, attack) / _cpu_seconds(extractor.extract, prose)
    if ratio > 5:  # measure once more before calling it a regression: the machine is shared
        ratio = _cpu_seconds(extractor.extract, attack, 5) / _cpu_seconds(extractor.extract, prose, 5)
    assert ratio <= 5, ratio


# -- a pure function: safe off the event loop ----------------------------------------------------

async def test_extraction_in_worker_threads_matches_sequential_extraction():
    extractor = RuleExtractor()
    batches = [_user(f"I prefer tea number {i}. To build it, run make {i}. note that {i} is odd", _fill("to test ", 3_000)) for i in range(16)]
    sequential = [extractor.extract(b) for b in batches]
    threaded = await asyncio.gather(*(asyncio.to_thread(extractor.extract, b) for b in batches))
    assert list(threaded) == sequential
    assert all(len(result) == 3 for result in sequential)


def test_a_long_sentence_is_kept_whole_never_cut_to_a_length():
    """What was said is stored, or not at all: no candidate is a prefix of its sentence."""
    long = "remember that " + "the billing service runs PostgreSQL 16 and Next.js 14, " * 40 + "end"
    assert RuleExtractor().extract(_user(long)) == [Candidate(Kind.FACT, long, "m0")]
