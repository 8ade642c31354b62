"""The lexical channel of the local backend: BM25 over an SQLite FTS5 index, bounded by the ScopeSet.

Why a second channel: an embedding blurs the rare, exact words a question often hinges on (a
name, a place, a number). BM25 weighs them by how rare they are; reciprocal rank fusion (`adapters/shared/fusion.py`)
of the two rankings is what `search` returns.

How the ScopeSet bounds it, before anything is ranked. Every indexed term carries the tag of the
scope its memory lives in (`<tag>x<term digest>`, tags from the injective table `lexical_scopes`),
and a query asks FTS5 only for the terms of the ScopeSet's own tags: the postings of any other
scope are never read, so a memory outside the set is never a candidate, whatever its words. The
joined `memories` row is then checked again (scope, status, kind, expiry, quarantine, an entry's
memory ids) inside the same statement. The BM25 statistics (document frequency, collection
size, average length) are computed over the ScopeSet's own candidates only, never with FTS5's
table-wide `bm25()`: a table-wide statistic would let the order of one user's own hits depend on
what other tenants wrote, a side channel.

Cost, bounded before any row is read: each scope-tagged query token's row count comes from the
index's vocabulary (an `fts5vocab` view; the caller remembers the counts until any write), the
rarest tokens are kept while their rows stay within MAX_CANDIDATES, and the candidate query runs
once. Common words weigh least in BM25, and a question made only of them is left to the vector
channel. These counts include rows of the scope in any status; they choose which words to look
up, never how a hit is scored.

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

What it must never do: read a posting of a scope outside the ScopeSet, widen a ScopeEntry, or
return a forgotten, expired, quarantined or deleted row.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import unicodedata
from typing import Iterable, Mapping, Sequence

from adapters.base import Status
from adapters.scopes import ScopeKey, ScopeSet

__all__ = ["SCHEMA", "terms", "index_rows", "unindex_rows", "rebuild", "in_step", "search_lexical", "FUSION_DEPTH"]

#: candidates each channel hands to the fusion (the vector scan costs the same for any k)
FUSION_DEPTH = 50
#: BM25 parameters (the usual ones)
K1, B = 1.2, 0.75
#: at most this many distinct query terms are looked up
MAX_QUERY_TERMS = 32
#: candidate rows read for one query; past it, the most common terms are left out (cost bound)
MAX_CANDIDATES = 200
#: the per-connection (temp) fts5vocab view of the index: rows per term, read from its postings
_VOCAB = "memories_lexical_vocab"

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
    """Harman's S-stemmer: plurals only, so "shifts" meets "shift" and little else moves."""
    if len(word) > 3 and word.isascii():
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


def _digest(term: str) -> str:
    return hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _tags(db: sqlite3.Connection, scope_texts: Iterable[str], *, create: bool) -> dict[str, int]:
    wanted = sorted(set(scope_texts))
    found: dict[str, int] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(db.execute(f"SELECT scope, tag FROM lexical_scopes WHERE scope IN ({marks})", chunk).fetchall())
    if create:
        for scope in wanted:
            if scope not in found:
                found[scope] = int(db.execute("INSERT INTO lexical_scopes (scope) VALUES (?)", (scope,)).lastrowid)
    return found


def index_rows(db: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index (rowid, scope text, content) rows; inside the caller's write transaction."""
    if not rows:
        return
    tags = _tags(db, (r[1] for r in rows), create=True)
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


def search_lexical(
    db: sqlite3.Connection, scopes: ScopeSet, text: str, *, limit: int, statuses: frozenset[Status],
    kinds: frozenset[str] | None, now: float, sizes: Mapping[str, int], token_rows: dict[str, int],
) -> list[tuple[ScopeKey, int, float]]:
    """BM25 top-`limit` over exactly the ScopeSet: (scope, rowid, bm25), best first.

    The FTS5 query names only the ScopeSet's scope tags, and the same statement checks each
    candidate's stored scope, status, kind, expiry and quarantine; an entry restricted to
    memory ids keeps only those. Statistics come from the ScopeSet's rows alone: `sizes` is the
    rows of each scope (by scope text; the caller's partitions know them). `token_rows` remembers
    the vocabulary's row counts across calls; the caller empties it whenever the index changes."""
    query_terms = list(dict.fromkeys(terms(text)))[:MAX_QUERY_TERMS]
    if not query_terms or limit <= 0:
        return []
    entries = {str(e.key): e for e in scopes}
    tags = _tags(db, entries, create=False)
    if not tags:
        return []
    scope_of_tag = {tag: scope for scope, tag in tags.items()}
    digests = {_digest(t): t for t in query_terms}
    tokens = [f"{tag}x{d}" for tag in tags.values() for d in digests]
    status_values = sorted(s.value for s in statuses)
    where = [
        f"m.scope IN ({','.join('?' * len(tags))})",
        f"m.status IN ({','.join('?' * len(status_values))})",
        "(m.expires_at IS NULL OR m.expires_at > ?)",
        "NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.row_ref = m.rowid AND q.memory_id = m.id)",
    ]
    params: list[object] = [*tags, *status_values, now]
    if kinds is not None:
        if not kinds:
            return []
        where.append(f"m.kind IN ({','.join('?' * len(kinds))})")
        params += sorted(kinds)
    tokens = _within_budget(db, tokens, token_rows)
    if not tokens:
        return []
    sql = (
        # CROSS JOIN: the FTS5 match drives (the planner could otherwise scan `memories`)
        "SELECT l.rowid, l.terms, m.scope, m.id FROM memories_lexical l CROSS JOIN memories m ON m.rowid = l.rowid"
        f" WHERE memories_lexical MATCH ? AND {' AND '.join(where)} LIMIT {MAX_CANDIDATES}"
    )
    rows = db.execute(sql, [" OR ".join(f'"{t}"' for t in tokens), *params]).fetchall()
    # an entry restricted to memory ids: only those ids of that scope
    rows = [r for r in rows if entries[r[2]].memory_ids is None or r[3] in entries[r[2]].memory_ids]  # type: ignore[operator]
    if not rows:
        return []
    wanted = set(tokens)
    docs: list[tuple[int, str, int, dict[str, int]]] = []
    df: dict[str, int] = {}
    for rowid, stored, scope, _ in rows:
        words = stored.split()
        tf = {w: words.count(w) for w in wanted.intersection(words)}  # C loops: a doc holds a few query terms
        for w in tf:
            df[w] = df.get(w, 0) + 1
        docs.append((rowid, scope, len(words), tf))
    avg_len = sum(d[2] for d in docs) / len(docs) or 1.0
    idf = {w: math.log(1.0 + (sizes.get(scope_of_tag[int(w.split("x", 1)[0])], 0) - n + 0.5) / (n + 0.5)) for w, n in df.items()}
    scored = []
    for rowid, scope, length, tf in docs:
        norm = K1 * (1.0 - B + B * length / avg_len)
        score = sum(idf[w] * f * (K1 + 1.0) / (f + norm) for w, f in tf.items())
        scored.append((-score, rowid, scope))
    scored.sort()
    keys = {scope: entries[scope].key for scope in tags}
    return [(keys[scope], rowid, -neg) for neg, rowid, scope in scored[:limit]]


def _within_budget(db: sqlite3.Connection, tokens: list[str], token_rows: dict[str, int]) -> list[str]:
    """The tokens to look up: the rarest first, for as long as the rows holding them (summed,
    an upper bound of their union) stay within MAX_CANDIDATES. None when even the rarest is held
    by more rows than that: a question made only of words that common has nothing for BM25 to
    tell apart, and the vector channel ranks alone (scoring the first rows found would be noise).

    Why: a question's common words ("the", "about", a name every note mentions) hold most rows of
    a scope and weigh least in BM25; reading and scoring all their rows made the channel cost
    a hundred times the vector scan. One look-up per token in the index's vocabulary reads only
    that token's postings, each of one scope of the ScopeSet, so the budget is decided before any
    row is read, and the candidate query runs once."""
    unknown = [t for t in tokens if t not in token_rows]
    if unknown:
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB} USING fts5vocab(main, memories_lexical, row)")
        for token in unknown:
            row = db.execute(f"SELECT doc FROM temp.{_VOCAB} WHERE term = ?", (token,)).fetchone()
            token_rows[token] = int(row[0]) if row else 0
    held = {t: token_rows[t] for t in tokens if token_rows[t]}
    kept: list[str] = []
    total = 0
    for token in sorted(held, key=lambda t: (held[t], t)):
        if total + held[token] > MAX_CANDIDATES:
            break
        kept.append(token)
        total += held[token]
    return kept
