"""Conversation -> candidate memories, deterministically (the local default extractor).

A rule-based extractor for Chinese and English: it keeps user statements of preference, profile,
decisions, department standards, facts and tasks, procedures and experience (the phrases are
data, in `bridge/capture/rules.py`), whole, and ignores everything else. It only proposes a
*kind* and *content*; where the memory lands is decided by the policy from the identity, so
a message saying "store this for user bob in the tenant scope" is just text.
Plug in an LLM extractor with any object implementing `Extractor`.

It must never take more than linear time in its input (message text is attacker-controlled:
a quadratic `.*` in an earlier procedure rule was an attack), and never hold shared mutable
state (the bridge runs it off the event loop, in a worker thread). So:

- every pattern has a *bounded match width* (literal phrases, or a gap of at most a few
  characters); a rule that needs "A, later in the sentence, B" is two bounded searches in a row
  (`_Rule.ordered`), never one regex with an unbounded gap;
- every rule's regex call sees a window of at most `WINDOW_CHARS + width + 1` characters
  (`search_windows`), so total work is linear and no single C-level call, which holds the GIL,
  runs long;
- sentences are found by `bridge/capture/segment.py` (one scan for break characters, bounded
  look-arounds), which never splits inside a dotted name, number, URL or abbreviation;
- module state is compiled patterns and frozen tuples, written once at import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Protocol, Sequence

from bridge.capture.rules import IN_AT_WORK, RULE_SPECS, RuleSpec
from bridge.capture.segment import sentences
from bridge.results import Message
from bridge.vocabulary import Kind

__all__ = ["Candidate", "Extractor", "RuleExtractor", "WINDOW_CHARS", "search_windows", "classify"]

WINDOW_CHARS = 1024
"""Match starts examined per regex call; each call sees this plus the pattern's width + 1."""


@dataclass(frozen=True)
class Candidate:
    kind: Kind
    content: str
    message_id: str | None
    message_index: int = 0  # position of the source message in the captured list


class Extractor(Protocol):
    def extract(self, messages: Sequence[Message]) -> list[Candidate]: ...


@dataclass(frozen=True)
class _Pattern:
    """A compiled pattern and the longest text any of its matches can span (lookarounds excluded).

    `width` must be an upper bound: windowed search relies on it to see every match whole
    (tests check it against the regex parser's own width)."""

    regex: re.Pattern[str]
    width: int
    phrases: tuple[str, ...] = ()  # the literal phrases it was built from, if any (tests use them)


def _is_ascii_word(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


@dataclass
class _TrieNode:
    children: dict[str, _TrieNode] = field(default_factory=dict)
    tail: str | None = None  # set where a phrase ends: what must follow it ("\\b" or "")


def _trie(phrases: Sequence[str]) -> str:
    """One regex for many literal phrases, common prefixes factored out ("i (?:like|love)").

    sre tries each alternative at each position, so a flat list of 16 phrases costs 16 tries
    per character; the trie costs one per shared prefix. A phrase ending in an ASCII word
    character is followed by `\\b`, so "fyi" misses "fyix". Used at import only."""
    root = _TrieNode()
    for phrase in phrases:
        node = root
        for char in phrase:
            node = node.children.setdefault(char, _TrieNode())
        node.tail = "\\b" if _is_ascii_word(phrase[-1]) else ""

    def emit(node: _TrieNode) -> str:
        items = [re.escape(char) + emit(child) for char, child in sorted(node.children.items())]
        if node.tail is not None:
            items.append(node.tail)
        if len(items) == 1:
            return items[0]
        return "(?:" + "|".join(items) + ")"  # an empty item (a phrase ends here) is fine

    return emit(root)


def _phrases(*phrases: str) -> tuple[_Pattern, ...]:
    """Case-insensitive literal phrases as at most two trie patterns.

    Phrases that start with an ASCII word character get a leading `\\b` (so "i am a" misses
    "hi am a"); CJK phrases get none (CJK is written without spaces, and a CJK character is
    also `\\w`). They are kept apart so the CJK pattern starts with a literal, which sre scans
    for quickly."""
    worded = [p for p in phrases if _is_ascii_word(p[0])]
    other = [p for p in phrases if not _is_ascii_word(p[0])]
    return tuple(
        _Pattern(re.compile(lead + _trie(group), re.IGNORECASE), max(map(len, group)), tuple(group))
        for lead, group in (("\\b", worded), ("", other)) if group
    )


def _one(*phrases: str) -> _Pattern:
    """`_phrases` for phrases that all start alike (ASCII or not), which make one pattern."""
    (pattern,) = _phrases(*phrases)
    return pattern


@dataclass(frozen=True)
class _Rule:
    """A kind and when a sentence is evidence for it.

    The rule holds if any `anywhere` pattern occurs, or for some (head, tail) in `ordered` the
    head occurs and the tail occurs after it. A head's leftmost match must also be its
    earliest-ending one (true for phrases none of which occurs inside another at a later
    start), so searching for the tail after the first head is exact."""

    kind: Kind
    anywhere: tuple[_Pattern, ...]
    ordered: tuple[tuple[_Pattern, _Pattern], ...] = ()


def _compile(spec: RuleSpec) -> _Rule:
    anywhere = _phrases(*spec.phrases)
    if spec.kind is Kind.PROFILE:
        anywhere = (*anywhere, _Pattern(re.compile(IN_AT_WORK, re.IGNORECASE), 2 + 12 + 2))
    return _Rule(spec.kind, anywhere, tuple((_one(*head), _one(*tail)) for head, tail in spec.ordered))


_RULES: tuple[_Rule, ...] = tuple(_compile(spec) for spec in RULE_SPECS)

MIN_SENTENCE_CHARS = 3
"""A shorter sentence ("ok.", "好的") is no evidence of anything."""


def search_windows(length: int, pos: int, width: int) -> Iterator[tuple[int, int]]:
    """The (pos, endpos) windows a pattern of match width `width` is run over, from `pos`.

    Window k examines match starts in [pos + k*WINDOW_CHARS, +WINDOW_CHARS) and sees `width` + 1
    characters beyond them, so a match starting there is seen whole together with the character
    after it (which `\\b` looks at); windows overlap by only `width` + 1, so the total text
    examined is at most (1 + (width + 1) / WINDOW_CHARS) times the input."""
    for start in range(pos, length, WINDOW_CHARS):
        yield start, min(length, start + WINDOW_CHARS + width + 1)


def _search(pattern: _Pattern, text: str, pos: int = 0) -> re.Match[str] | None:
    """`pattern.regex.search(text, pos)`, the same leftmost match, one bounded window at a time.

    A window's `endpos` makes `\\b` see an end of text that is not there, so a match is taken
    only if it starts in the window's own range: it then ends at least one character before
    `endpos` and every lookaround it used saw the real text."""
    if len(text) - pos <= WINDOW_CHARS:  # the common case: a sentence fits one window
        return pattern.regex.search(text, pos)
    for start, end in search_windows(len(text), pos, pattern.width):
        found = pattern.regex.search(text, start, end)
        if found is not None and (found.start() < start + WINDOW_CHARS or end == len(text)):
            return found
    return None


def _holds(rule: _Rule, text: str) -> bool:
    for pattern in rule.anywhere:
        if _search(pattern, text) is not None:
            return True
    for head, tail in rule.ordered:
        first = _search(head, text)
        if first is not None and _search(tail, text, first.end()) is not None:
            return True
    return False


def classify(text: str) -> Kind | None:
    """The kind of the first rule (in `RULE_SPECS` order) that holds for a sentence of `text`,
    or None when none does. Linear in `text`, like `extract`."""
    parts = [s for s in sentences(text) if len(s) >= MIN_SENTENCE_CHARS] or [text]
    for rule in _RULES:
        if any(_holds(rule, part) for part in parts):
            return rule.kind
    return None


@dataclass(frozen=True)
class RuleExtractor:
    """The default extractor: a pure function of the messages it is given.

    A candidate is one whole sentence (or one header with its list) exactly as the user wrote
    it: `bridge/capture/segment.py` never splits inside a dotted name, a version, a number, a
    URL or an abbreviation, and nothing is ever cut to a length — what was said is stored, or
    not at all (the service's content limit bounds a message before it gets here).

    `extract` reads no state but frozen module constants and its own locals, so it is safe to
    run in worker threads, concurrently (`await asyncio.to_thread(extractor.extract, messages)`),
    and its cost is linear in the total message length: see the module docstring."""

    def extract(self, messages: Sequence[Message]) -> list[Candidate]:
        out: list[Candidate] = []
        seen: set[str] = set()
        for index, message in enumerate(messages):
            if message.role != "user":
                continue  # only what the user said is evidence about the user
            for text in sentences(message.content):
                if len(text) < MIN_SENTENCE_CHARS:
                    continue
                for rule in _RULES:
                    if _holds(rule, text):
                        if text not in seen:
                            seen.add(text)
                            out.append(Candidate(rule.kind, text, message.message_id, index))
                        break
        return out
