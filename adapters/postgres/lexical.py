"""The lexical channel of the PostgreSQL backend: full-text search fused with the vector channel.

Why: the same as the local backend's (adapters/local/lexical.py): rare exact words a question
hinges on. Here the index is a generated `tsvector` column (`memories.lexical`, migration 4),
so PostgreSQL itself keeps it in step with every insert, content update and delete, and a
GIN index serves it. The `simple` configuration (no stemming, no stop words: one behaviour for
every language); CJK characters are spaced out before it, so Chinese is matched character by
character (the `simple` parser would otherwise make one token of a whole run of Chinese).

Bound by the ScopeSet before ranking: the lexical query runs in a transaction that declared the
ScopeSet (row-level security) and carries the same WHERE as the vector branch (scopes, an
entry's memory ids, statuses, kinds, expiry); only then are rows ranked. `ts_rank` reads no
collection statistics, so nothing another scope holds moves the order of a readable hit.

What it must never do: read a row outside the ScopeSet, or return a row the vector branch's
filters would exclude.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Any

from adapters.base import Hit
from adapters.shared.fusion import fuse

#: candidates each channel hands to the fusion
FUSION_DEPTH = 50

__all__ = ["MIGRATION", "lexical_query", "lexical_statement", "fuse_hits", "FUSION_DEPTH"]

_CJK = "\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff"

#: appended to MEMORY_MIGRATIONS (adapters/postgres/schema.py)
MIGRATION = f"""
    ALTER TABLE memories ADD COLUMN lexical tsvector GENERATED ALWAYS AS
        (to_tsvector('simple'::regconfig, regexp_replace(content, '([{_CJK}])', ' \\1 ', 'g'))) STORED;
    CREATE INDEX memories_lexical ON memories USING GIN (lexical);
"""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_CHAR = re.compile(f"[{_CJK}]".encode().decode("unicode_escape"))


def lexical_query(text: str) -> str | None:
    """The query's words and CJK characters as a `to_tsquery('simple', ...)` OR-expression of
    quoted lexemes (every character outside [letters, digits] dropped: nothing to escape)."""
    lexemes: list[str] = []
    for token in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        for part in _CJK_CHAR.sub(lambda m: f" {m.group(0)} ", token).split():
            if part not in lexemes:
                lexemes.append(part)
    return " | ".join(f"'{w}'" for w in lexemes[:32]) or None


#: the lexical branch: the vector branch's WHERE (filled in by the backend) plus the match
LEXICAL_SQL = (
    "SELECT {columns}, -(m.embedding <#> %(q)s), ts_rank(m.lexical, query) AS lexical_rank"
    " FROM memories m, to_tsquery('simple', %(lq)s) query"
    " WHERE (m.scope = ANY(%(all_open)s) OR (m.id = ANY(%(ids)s) AND (m.scope || chr(30) || m.id) = ANY(%(pairs)s)))"
    " AND m.status = ANY(%(statuses)s) AND (m.expires_at IS NULL OR m.expires_at > %(now)s){kinds}"
    " AND m.lexical @@ query ORDER BY lexical_rank DESC, m.seq LIMIT %(depth)s"
)


def lexical_statement(columns: str, *, with_kinds: bool) -> str:
    """The lexical branch for these row columns (the backend's, prefixed `m.`)."""
    return LEXICAL_SQL.format(columns=columns, kinds=" AND m.kind = ANY(%(kinds)s)" if with_kinds else "")


def fuse_hits(hits: list[Hit], lexical: list[Hit], limit: int) -> list[Hit]:
    """The vector channel's hits (best first) fused with the lexical channel's (best first, each
    scored with its own similarity), top `limit`: every vector hit stays a candidate."""
    if not lexical:
        return hits[:limit]
    by_key: dict[int, Hit] = {}
    number: dict[str, int] = {}
    for hit in (*hits, *lexical):
        by_key.setdefault(number.setdefault(hit.memory.id, len(number)), hit)
    fused = fuse([(h.scope, number[h.memory.id], h.score) for h in hits], [(h.scope, number[h.memory.id], 0.0) for h in lexical], limit,
                 {number[h.memory.id]: h.score for h in lexical})
    return [dataclasses.replace(by_key[n], score=score) for _, n, score in fused]
