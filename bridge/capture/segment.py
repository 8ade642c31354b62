"""Sentence segmentation that never cuts a name, a number or a URL in two.

Capture stores sentences as the user wrote them, so a wrong split silently changes their words
("I prefer the Next.js App Router" stored as "I prefer the Next."). The rules, in order:

- a line break ends a sentence, except that a line ending in ':' / '：' followed by list items
  ("- x", "* x", "1. x", "• x") is kept together with those items as one block;
- CJK terminators (。！？) always end a sentence; a '；' or ';' joins clauses, so it never does;
- ASCII '.', '!' and '?' end one only when what follows (after closing quotes or brackets) is
  whitespace, the end of the text or a CJK character — so `Next.js`, `14.2.1`, `3.5`, `setup.py`,
  `https://x.io/a?b=1` stay whole — and a '.' never ends one after a known abbreviation
  (`e.g.`, `Dr.`, `U.S.`, a single initial).

When in doubt it does not split: a longer sentence loses nothing, a cut one does. Linear in the
text: one regex scan for break characters, and every look-around is bounded.
"""

from __future__ import annotations

import re
from typing import Iterator

__all__ = ["sentences", "ABBREVIATIONS"]

_BREAK = re.compile(r"[。！？!?.\n]")
_CJK_END = frozenset("。！？")
_CLOSERS = frozenset("\"')]}»”’」』）】〉》")
_LIST_ITEM = re.compile(r"\s*(?:[-*•·‣]|\d{1,3}[.)、]|[a-zA-Z][.)]|[（(]\d{1,3}[)）])\s")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]|[A-Z]")
_LOOKBACK = 16  # the longest abbreviation looked at, so the check is bounded

#: Words after which '.' is part of the word, not the end of a sentence (lower case, no dot).
ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "inc", "ltd", "co", "corp",
    "no", "nr", "fig", "approx", "dept", "est", "cf", "al", "eg", "ie", "viz", "gen", "rev",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "ca", "min", "max",
})


def _is_cjk(char: str) -> bool:
    o = ord(char)
    return 0x3000 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF or 0xAC00 <= o <= 0xD7AF


def _abbreviation_before(text: str, dot: int) -> bool:
    start = dot
    while start > 0 and dot - start < _LOOKBACK and not text[start - 1].isspace():
        start -= 1
    word = text[start:dot].lstrip("([{\"'“‘")
    if not word:
        return False
    return word.lower() in ABBREVIATIONS or _INITIALS.fullmatch(word) is not None


def _line_sentences(text: str, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """(start, end) spans of the sentences in text[lo:hi], which holds no line break."""
    start = skip_until = lo
    for found in _BREAK.finditer(text, lo, hi):
        i = found.start()
        if i < skip_until:
            continue
        char = text[i]
        end = i + 1
        if char in _CJK_END:
            while end < hi and (text[end] in _CJK_END or text[end] in _CLOSERS):
                end += 1
        else:
            while end < hi and text[end] in ".!?":  # an ellipsis or "?!" is one break
                end += 1
            while end < hi and text[end] in _CLOSERS:
                end += 1
            skip_until = end
            if end < hi and not (text[end].isspace() or _is_cjk(text[end])):
                continue  # inside a word: Next.js, 3.5, setup.py, a URL
            if char == "." and end == i + 1 and _abbreviation_before(text, i):
                continue
            if text[i:end].startswith("..") and end + 1 < hi and text[end] == " " and text[end + 1].islower():
                continue  # "Wait... we chose": an ellipsis before a lower-case word is a pause
        skip_until = end
        yield start, end
        start = end
    if start < hi:
        yield start, hi


def _lines(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    while True:
        nl = text.find("\n", start)
        if nl < 0:
            out.append((start, len(text)))
            return out
        out.append((start, nl))
        start = nl + 1


def sentences(text: str) -> Iterator[str]:
    """The sentences of `text`, each stripped of surrounding whitespace, none empty; every
    character of `text` other than that whitespace is in exactly one of them, in order."""
    lines = _lines(text)
    n = 0
    while n < len(lines):
        lo, hi = lines[n]
        body = text[lo:hi].rstrip()
        if body.endswith((":", "：")) and n + 1 < len(lines) and _LIST_ITEM.match(text, *lines[n + 1]):
            last = n + 1
            while last + 1 < len(lines) and _LIST_ITEM.match(text, *lines[last + 1]):
                last += 1
            block = text[lo:lines[last][1]].strip()
            if block:
                yield block
            n = last + 1
            continue
        for start, end in _line_sentences(text, lo, hi):
            piece = text[start:end].strip()
            if piece:
                yield piece
        n += 1
