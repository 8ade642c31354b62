"""Recall stage "budget": fill a token budget with the best memories: de-duplicated, per-kind quotas, conflicts kept.

Token estimate: CJK ideographs/kana/hangul count about one token each, other text about four
characters per token (typical BPE behaviour for both scripts); plug in a real tokenizer with
any object that has `count(text) -> int`.

Conflicts: memories of the same kind that declare the same `topic` in metadata disagree about
one thing. The one from the lower (more specific) scope wins — private over workspace over
department over tenant over global, as seed 003 asks — and the loser is kept as its
`conflicts_with` source instead of being silently dropped. A task's working memory is narrower
than the agent's memory it belongs to, and a team (a group of agents inside a project) is
narrower than a workspace; the user's own private memory stays first, as seed 003 puts the
current user's confirmed facts before everything else.
"""

from __future__ import annotations

import math
import re
import unicodedata

from adapters.scopes import Visibility
from bridge.recall.config import BudgetConfig, TokenCounter
from bridge.recall.context import BudgetedItem
from bridge.recall.context import RankedHit

from bridge.recall.context import RecallContext, RecallRuntime

# Every scope class has an entry (tests/bridge/test_scope_tables.py walks the vocabulary): a
# missing one is a KeyError in the middle of a recall.
_SPECIFICITY = {
    Visibility.PRIVATE: 0,
    Visibility.TASK: 1,
    Visibility.AGENT: 2,
    Visibility.TEAM: 3,
    Visibility.WORKSPACE: 4,
    Visibility.DEPARTMENT: 5,
    Visibility.TENANT: 6,
    Visibility.GLOBAL: 7,
}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


class EstimatingTokenCounter:
    def count(self, text: str) -> int:
        if text.isascii():  # fast path: no CJK possible
            return math.ceil(len(text) / 4)
        cjk = len(_CJK.findall(text))
        rest = len(text) - cjk
        return cjk + math.ceil(rest / 4)


def fold_spaces(text: str) -> str:
    """`" ".join(text.split())`, without splitting text that is already folded.

    Every character `str.split()` splits on, except the space itself, is non-printable
    (categories Cc, Zs, Zl, Zp; tests/bridge/test_recall_stages.py checks all of Unicode), so a
    printable text with no double, leading or trailing space has nothing to fold.
    """
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return " ".join(text.split())


def _normalised(text: str) -> str:
    """The dedup key: NFKC, case-folded, whitespace folded (for ASCII, casefold is lower)."""
    if text.isascii():
        return fold_spaces(text.lower())
    return fold_spaces(unicodedata.normalize("NFKC", text).casefold())


#: every ASCII character `str.split()` splits on except the space (tab, newline, vertical tab,
#: form feed, carriage return, and the four separators 0x1c-0x1f)
_ASCII_SPLITTERS_BUT_SPACE = bytes(c for c in range(128) if chr(c).isspace() and c != 0x20)


def _no_ascii_splitter_but_space(texts: list[str]) -> bool:
    """True when no text holds an ASCII character `str.split()` splits on other than the space.

    One C pass over all the texts together instead of `str.isprintable()` on each: isprintable
    looks every character up in the Unicode database (~3 ns a character, a quarter of the
    budget's time on 50 candidates). UTF-8 writes every character above 0x7f as bytes above 0x7f,
    so a byte below 0x80 in the encoded text is exactly an ASCII character of some text
    (`surrogatepass`: a lone surrogate encodes instead of raising).
    """
    joined = "".join(texts).encode("utf-8", "surrogatepass")
    return len(joined.translate(None, _ASCII_SPLITTERS_BUT_SPACE)) == len(joined)


def min_item_tokens(config: BudgetConfig) -> int:
    return config.per_item_overhead + 1


def assemble(
    ranked: list[RankedHit], config: BudgetConfig, counter: TokenCounter | None = None, *, presorted: bool = False
) -> tuple[list[BudgetedItem], int]:
    """Pick items in rank order. Returns (items, tokens used).

    `presorted=True`: `ranked` is already in rank order — the purpose's lead class first, then
    (-score, id), as the rank stage returns it — so it is not sorted again (a filtered list keeps
    that order); without it, items are sorted by (-score, id).
    """
    counter = counter or EstimatingTokenCounter()
    estimate = type(counter) is EstimatingTokenCounter  # its ASCII rule inlined below
    # 1) conflicts: per (kind, topic) the most specific scope wins, ties by rank
    winners: dict[tuple[str, str], RankedHit] = {}
    losers: dict[str, list[RankedHit]] = {}
    topical: list[tuple[RankedHit, tuple[str, str]]] = []
    for r in ranked:
        memory = r.hit.memory
        topic = memory.metadata.get("topic")
        if topic is None or not isinstance(topic, str) or not topic:  # None first: most memories state no topic
            continue
        slot = (memory.kind, topic)
        topical.append((r, slot))
        best = winners.get(slot)
        if best is None or _SPECIFICITY[r.hit.scope.visibility] < _SPECIFICITY[best.hit.scope.visibility]:
            winners[slot] = r
    beaten: set[str] = set()
    for r, slot in topical:
        winner = winners[slot]
        if winner is not r:
            losers.setdefault(winner.hit.memory.id, []).append(r)
            beaten.add(r.hit.memory.id)
    if presorted:
        ordered = [r for r in ranked if r.hit.memory.id not in beaten] if beaten else ranked
    else:
        ordered = sorted((r for r in ranked if r.hit.memory.id not in beaten), key=lambda r: (-r.score, r.hit.memory.id))
    # 2) dedup, quotas, budget
    chosen: list[BudgetedItem] = []
    by_text: dict[str, BudgetedItem] = {}
    per_kind: dict[str, int] = {}
    quotas = config.kind_quotas
    max_items, max_tokens, overhead = config.max_items, config.max_tokens, config.per_item_overhead
    used = 0
    room = max_items  # items still allowed: one counter instead of len(chosen) per candidate
    memories = [r.hit.memory for r in ordered]
    contents = [m.content for m in memories]
    # the dedup key of ASCII text (`_normalised`) inlined: its lower case, folded only when it
    # holds a double, leading or trailing space or a splitter other than the space; with no such
    # splitter in any candidate (the usual case, one pass for all), nothing else needs folding
    plain_spaces = _no_ascii_splitter_but_space(contents)
    for r, memory, content in zip(ordered, memories, contents):
        ascii_text = content.isascii()
        if ascii_text:
            key = content.lower()
            if "  " in key or key[:1] == " " or key[-1:] == " " or not (plain_spaces or key.isprintable()):
                key = " ".join(key.split())
        else:
            key = _normalised(content)
        same = by_text.get(key)
        if same is not None:
            same.duplicates.append(r)
            continue
        kind = memory.kind
        if quotas:
            quota = quotas.get(kind)
            if quota is not None and per_kind.get(kind, 0) >= quota:
                continue
        if room <= 0:
            break
        tokens = ((len(content) + 3) // 4 if estimate and ascii_text else counter.count(content)) + overhead
        if used + tokens > max_tokens:
            continue  # a smaller, lower-ranked memory may still fit
        item = BudgetedItem(r, tokens, [], losers.get(memory.id, []) if losers else [])
        chosen.append(item)
        by_text[key] = item
        if quotas:  # counted only where a quota reads it
            per_kind[kind] = per_kind.get(kind, 0) + 1
        used += tokens
        room -= 1
    return chosen, used


def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    ctx.chosen, ctx.tokens_used = assemble(ctx.ranked, ctx.budget, rt.token_counter, presorted=True)
