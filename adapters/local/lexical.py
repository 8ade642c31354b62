"""The lexical channel's persistent index: scope-tagged term digests in SQLite FTS5, written with the rows.

Why a second channel: an embedding blurs the rare, exact words a question often hinges on (a
name, a place, a number). BM25 weighs them by how rare they are; reciprocal rank fusion (`adapters/shared/fusion.py`)
of the two rankings is what `search` returns.

How the ScopeSet bounds it. Every indexed term carries the tag of the scope its memory lives in
(`<tag>x<term digest>`, tags from the injective table `lexical_scopes`), so one scope's terms can
be read without touching any other's. Ranking does not query this index per search: each
partition keeps its rows' terms in memory (adapters/local/postings.py, read from here), and BM25
runs over exactly the rows the search's scan may return (adapters/local/lexical_search.py), with
statistics of those rows alone, never FTS5's table-wide `bm25()`: a table-wide statistic would let
the order of one user's own hits depend on what other tenants wrote, a side channel.

Terms: NFKC, case-folded words (a light English plural stemmer) and, for CJK runs, character
unigrams and bigrams (FTS5's unicode61 tokenizer does not segment Chinese and the trigram
tokenizer misses two-character words such as 血压). They are stored as digests, so the index
holds no readable text.

In step with the data: the write path calls `index_rows` / `unindex_rows` inside its own
transaction (put, content update, delete, erasure), so the index commits or rolls back with the
rows it describes; `rebuild` fills it when a store is upgraded and whenever, at open, it does not
hold exactly the rows of `memories`.

Erasure, honestly: a deleted row's postings are removed from the index, but SQLite 3.40's FTS5
has no `secure-delete` option, so until segments merge their pages may still hold the deleted
term digests (never the text): the same standing as the freed pages of `memories` itself.

What it must never do: index a row under another scope's tag, or keep the terms of a row that
was deleted or whose content changed.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import unicodedata
from typing import Iterable, Sequence

import numpy as np

__all__ = ["SCHEMA", "terms", "index_rows", "unindex_rows", "rebuild", "in_step", "scope_tag", "query_probes", "FUSION_DEPTH", "K1", "B"]

#: candidates each channel hands to the fusion (the vector scan costs the same for any k)
FUSION_DEPTH = 50
#: BM25 parameters (the usual ones)
K1, B = 1.2, 0.75
#: at most this many distinct query terms are looked up
MAX_QUERY_TERMS = 32

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lexical_scopes (tag INTEGER PRIMARY KEY, scope TEXT NOT NULL UNIQUE)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_lexical USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0')",
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
        or 0xF900 <= code <= 0xFAFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF
    )


def _stem(word: str) -> str:
    """Harman's S-stemmer: plurals only, so "shifts" meets "shift" and little else moves. Every
    rule needs a final "s": any other word is returned before the suffix tests."""
    if len(word) > 3 and word[-1] == "s" and word.isascii():
        if word.endswith("ies") and not word.endswith(("eies", "aies")):
            return word[:-3] + "y"
        if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
            return word[:-1]
        if word.endswith("s") and not word.endswith(("us", "ss")):
            return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The lexical terms of `text`, in order, repeated as they occur."""
    out: list[str] = []
    for token in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if token.isascii():  # no CJK in it: the loop below would yield the stemmed token itself
            out.append(_stem(token))
            continue
        run: list[str] = []
        word: list[str] = []
        for ch in token + "\0":
            if ch != "\0" and _is_cjk(ch):
                if word:
                    out.append(_stem("".join(word)))
                    word.clear()
                run.append(ch)
                continue
            if run:
                out.extend(run)
                out.extend(a + b for a, b in zip(run, run[1:]))
                run.clear()
            if ch != "\0":
                word.append(ch)
        if word:
            out.append(_stem("".join(word)))
    return out


#: an empty 6-byte blake2b, never updated: each term's hash starts as a copy of it, which costs
#: less than the constructor's parameter handling (a question hashes every one of its terms)
_EMPTY_HASH = hashlib.blake2b(digest_size=6)


def _hashed(term: str) -> "hashlib.blake2b":
    hashed = _EMPTY_HASH.copy()
    hashed.update(term.encode("utf-8", "surrogatepass"))
    return hashed


def _digest(term: str) -> str:
    """A term as the index stores it (12 hex digits)."""
    return _hashed(term).hexdigest()


def _tags(db: sqlite3.Connection, scope_texts: Iterable[str]) -> dict[str, int]:
    """The tag of each scope, made for a scope indexed for the first time (inside the caller's write)."""
    wanted = sorted(set(scope_texts))
    found: dict[str, int] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(db.execute(f"SELECT scope, tag FROM lexical_scopes WHERE scope IN ({marks})", chunk).fetchall())
    for scope in wanted:
        if scope not in found:
            found[scope] = int(db.execute("INSERT INTO lexical_scopes (scope) VALUES (?)", (scope,)).lastrowid)
    return found


def index_rows(db: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index (rowid, scope text, content) rows; inside the caller's write transaction."""
    if not rows:
        return
    tags = _tags(db, (r[1] for r in rows))
    db.executemany(
        "INSERT INTO memories_lexical (rowid, terms) VALUES (?, ?)",
        [(rowid, " ".join(f"{tags[scope]}x{_digest(t)}" for t in terms(content))) for rowid, scope, content in rows if isinstance(content, str)],
    )


def unindex_rows(db: sqlite3.Connection, rowids: Iterable[int]) -> None:
    """Take rows out of the index; inside the caller's write transaction."""
    db.executemany("DELETE FROM memories_lexical WHERE rowid = ?", [(int(r),) for r in rowids])


def rebuild(db: sqlite3.Connection) -> int:
    """Index every row of `memories` afresh (upgrade, or an index found out of step at open)."""
    db.execute("DELETE FROM memories_lexical")
    count = 0
    cursor = db.execute("SELECT rowid, scope, content FROM memories ORDER BY rowid")
    while batch := cursor.fetchmany(2000):
        index_rows(db, [r for r in batch if isinstance(r[1], str)])
        count += len(batch)
    db.execute("INSERT INTO memories_lexical (memories_lexical) VALUES ('optimize')")
    return count


def in_step(db: sqlite3.Connection) -> bool:
    """Whether the index holds exactly the rows of `memories` (compared by count and rowid sums)."""
    mem = db.execute("SELECT count(*), coalesce(sum(rowid), 0) FROM memories").fetchone()
    lex = db.execute("SELECT count(*), coalesce(sum(rowid), 0) FROM memories_lexical").fetchone()
    return tuple(mem) == tuple(lex)


def scope_tag(db: sqlite3.Connection, scope_text: str) -> int | None:
    """The tag the index gives this scope's terms (None: nothing of the scope was ever indexed)."""
    row = db.execute("SELECT tag FROM lexical_scopes WHERE scope = ?", (scope_text,)).fetchone()
    return int(row[0]) if row else None


def query_probes(text: str) -> np.ndarray:
    """What the in-memory postings (adapters/local/postings.py) are searched for: the digests of a
    question's distinct terms (at most MAX_QUERY_TERMS of them), ascending, as the integers the
    postings are sorted by, followed by each of them plus one, so a single `searchsorted` gives
    every term's first posting and the first posting after its own. Digests are 48-bit: plus one
    never wraps.

    Not kept between questions: a digest cache shared by every tenant's questions would make one
    tenant's recall a little faster for the words another tenant asked about lately, a timing
    side channel."""
    distinct = list(dict.fromkeys(terms(text)))[:MAX_QUERY_TERMS]
    # the 6-byte digests are big-endian integers of one width: as bytes they sort as those integers
    # do (digest_value(_digest(t))), and two zero bytes before each make it an 8-byte big-endian
    # integer, so numpy reads them all at once (no Python int per term, no list of them to convert)
    digests = sorted({_hashed(t).digest() for t in distinct})
    padded = b"\0\0".join([b"", *digests])
    return np.frombuffer(padded * 2, dtype=">u8") + _PLUS_ONE[len(digests)]


#: what `query_probes` adds to its digests read twice: 0 to each the first time, 1 the second
_PLUS_ONE = [np.repeat(np.array([0, 1], dtype=np.uint64), n) for n in range(MAX_QUERY_TERMS + 1)]
