"""The lexical channel of the PostgreSQL backend: full-text search fused with the vector channel.

Why: the same as the local backend's (adapters/local/lexical.py): rare exact words a question
hinges on. Here the words are a generated `tsvector` column (`memories.lexical`), so PostgreSQL
itself keeps it in step with every insert, content update and delete (`ts_rank` reads it). The `simple` configuration (no stemming, no stop words: one behaviour for every language); CJK
characters are spaced out before it, so Chinese is matched character by character (the
`simple` parser would otherwise make one token of a whole run of Chinese).

Lexemes are tagged by scope (migration 6, `memory_scoped_lexemes`): every lexeme of a row is
stored as `<tag>:<word>`, the tag being the first 16 hex digits of SHA-256 of the row's scope
key, and `memory_postings` holds one row per tagged word and memory (kept in step by a trigger;
a B-tree, since under row-level security PostgreSQL uses an index only through leakproof
operators, which text equality is and no GIN operator is). A query asks for the tagged words of
the ScopeSet's own scopes only, so reading or counting a word's postings never touches another
scope's rows, and a memory outside the set is never a candidate, whatever its words.

Bound by the ScopeSet before ranking, twice: the queries run in a transaction that declared the
ScopeSet (row-level security) and carry the vector branch's WHERE (scopes, an entry's memory
ids, statuses, kinds, expiry). `ts_rank` reads no collection statistics, so nothing another
scope holds moves the order of a readable hit.

Cost, bounded before any row is read: the lexical statement first counts, for each tagged query
word, the postings of the ScopeSet holding it (`memory_postings`, under its own row-level
security and the ScopeSet's scopes and memory ids; a posting carries no status or expiry, so
these counts include rows of any status: they choose which words to look up, never how a hit is
scored; each count stopped at MAX_CANDIDATES + 1 rows: a word past the budget is never kept, so
counting further would only cost); the rarest words are kept while their rows stay within
MAX_CANDIDATES (in the same statement: the counts never travel to the client and back), and only
they are looked up and ranked under the vector branch's full WHERE. A question made only of
words that common is left to the vector channel (ranking an arbitrary first slice of rows would
be noise).
The counts are over the ScopeSet's own readable rows only, never table-wide: a table-wide
statistic would let the order of one user's hits depend on what other tenants wrote.

What it must never do: read a row outside the ScopeSet, or return a row the vector branch's
filters would exclude.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Iterable, Sequence

from adapters.postgres.lists import listed
from adapters.shared.fusion import fuse

#: candidates each channel hands to the fusion
FUSION_DEPTH = 50
#: candidate rows read for one query; past it, the most common words are left out (cost bound)
MAX_CANDIDATES = 200
#: at most this many distinct query words are looked up
MAX_QUERY_WORDS = 32
#: hex digits of SHA-256(scope key) that tag a lexeme (64 bits: two scopes never share postings in practice)
TAG_DIGITS = 16
#: a candidate of either channel before its row is read: (scope key, memory id, similarity)
Ranked = tuple[str, str, float]

__all__ = ["MIGRATION", "SCOPED_MIGRATION", "lexical_words", "scope_tag", "tagged_terms", "COUNT_SQL", "KEPT_SQL",
           "lexical_statement", "rows_statement", "fuse_ranked", "Ranked", "FUSION_DEPTH", "MAX_CANDIDATES"]

_CJK = "\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff"

#: appended to MEMORY_MIGRATIONS (adapters/postgres/schema.py)
MIGRATION = f"""
    ALTER TABLE memories ADD COLUMN lexical tsvector GENERATED ALWAYS AS
        (to_tsvector('simple'::regconfig, regexp_replace(content, '([{_CJK}])', ' \\1 ', 'g'))) STORED;
    CREATE INDEX memories_lexical ON memories USING GIN (lexical);
"""

#: appended to MEMORY_MIGRATIONS after MIGRATION (adapters/postgres/schema.py): the column again,
#: now of scope-tagged lexemes, positions kept (so `ts_rank` weighs a row as before). The table
#: is rewritten once (a generated column cannot change its expression in place).
SCOPED_MIGRATION = f"""
    CREATE OR REPLACE FUNCTION memory_scoped_lexemes(scope text, content text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog AS $$
        SELECT COALESCE((
            SELECT string_agg('''' || replace(replace(t.tag || l.lexeme, '\\', '\\\\'), '''', '''''') || ''':'
                              || array_to_string(l.positions, ','), ' ')
            FROM (SELECT left(encode(sha256(convert_to(scope, 'UTF8')), 'hex'), {TAG_DIGITS}) || ':' AS tag) t,
                 unnest(to_tsvector('simple'::regconfig, regexp_replace(content, '([{_CJK}])', ' \\1 ', 'g'))) l
        ), '')::tsvector
    $$;
    DROP INDEX IF EXISTS memories_lexical;
    ALTER TABLE memories DROP COLUMN IF EXISTS lexical;
    ALTER TABLE memories ADD COLUMN lexical tsvector GENERATED ALWAYS AS (memory_scoped_lexemes(scope, content)) STORED;

    CREATE TABLE IF NOT EXISTS memory_postings (term text NOT NULL, memory_id text NOT NULL, scope text NOT NULL,
                                                PRIMARY KEY (term, memory_id) INCLUDE (scope));
    CREATE INDEX IF NOT EXISTS memory_postings_by_memory ON memory_postings (memory_id);
    ALTER TABLE memory_postings ENABLE ROW LEVEL SECURITY;
    DROP POLICY IF EXISTS memory_postings_in_scope_set ON memory_postings;
    CREATE POLICY memory_postings_in_scope_set ON memory_postings FOR SELECT TO {{runtime}}
        USING (
            scope = ANY ((SELECT string_to_array(current_setting('viking_bridge.scopes', true), chr(31)))::text[])
            OR (memory_id = ANY ((SELECT string_to_array(current_setting('viking_bridge.memory_ids', true), chr(31)))::text[])
                AND (scope || chr(30) || memory_id) = ANY ((SELECT string_to_array(current_setting('viking_bridge.memories', true), chr(31)))::text[]))
        );
    GRANT SELECT ON memory_postings TO {{runtime}};
    CREATE OR REPLACE FUNCTION memory_postings_sync() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog AS $$
    DECLARE
        target regclass := format('%I.memory_postings', TG_TABLE_SCHEMA)::regclass;
    BEGIN
        IF TG_OP IN ('DELETE', 'UPDATE') THEN
            EXECUTE format('DELETE FROM %s WHERE memory_id = $1', target) USING OLD.id;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            EXECUTE format('INSERT INTO %s (term, memory_id, scope) SELECT l.lexeme, $1, $2 FROM unnest($3) l', target)
                USING NEW.id, NEW.scope, NEW.lexical;
        END IF;
        RETURN NULL;
    END $$;
    REVOKE ALL ON FUNCTION memory_postings_sync() FROM PUBLIC;
    DROP TRIGGER IF EXISTS memories_sync_postings ON memories;
    CREATE TRIGGER memories_sync_postings AFTER INSERT OR DELETE OR UPDATE OF content ON memories
        FOR EACH ROW EXECUTE FUNCTION memory_postings_sync();
    -- the rows already stored (the owner is bound by the forced policy too: lifted for this
    -- statement only, inside the migration's transaction)
    ALTER TABLE memories NO FORCE ROW LEVEL SECURITY;
    DELETE FROM memory_postings;
    INSERT INTO memory_postings (term, memory_id, scope) SELECT l.lexeme, m.id, m.scope FROM memories m, unnest(m.lexical) l;
    ALTER TABLE memories FORCE ROW LEVEL SECURITY;
"""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_CHAR = re.compile(f"[{_CJK}]".encode().decode("unicode_escape"))


def lexical_words(text: str) -> list[str]:
    """The query's distinct words and CJK characters, NFKC case-folded, in order (at most
    MAX_QUERY_WORDS; every character outside [letters, digits] dropped: nothing to escape)."""
    words: list[str] = []
    for token in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        for part in _CJK_CHAR.sub(lambda m: f" {m.group(0)} ", token).split():
            if part not in words:
                words.append(part)
    return words[:MAX_QUERY_WORDS]


def scope_tag(scope: str) -> str:
    """The tag of a scope's lexemes: what `memory_scoped_lexemes` computes in the database."""
    return hashlib.sha256(scope.encode("utf-8")).hexdigest()[:TAG_DIGITS]


def tagged_terms(words: Sequence[str], scopes: Iterable[str]) -> list[str]:
    """Every (scope, word) pair as the stored lexeme `<tag>:<word>`, scopes in order."""
    return [f"{tag}:{word}" for tag in map(scope_tag, dict.fromkeys(scopes)) for word in words]


#: the vector branch's WHERE (filled in by the backend), shared by the count and the candidates
_WHERE = (
    "(m.scope = ANY(" + listed("all_open") + ") OR (m.id = ANY(" + listed("ids") + ")"
    " AND (m.scope || chr(30) || m.id) = ANY(" + listed("pairs") + ")))"
    " AND m.status = ANY(" + listed("statuses") + ") AND (m.expires_at IS NULL OR m.expires_at > %(now)s){kinds}"
)
#: the ScopeSet over the postings (their own row-level security says the same)
_POSTINGS_IN_SET = ("(p.scope = ANY(" + listed("all_open") + ") OR (p.memory_id = ANY(" + listed("ids") + ")"
                    " AND (p.scope || chr(30) || p.memory_id) = ANY(" + listed("pairs") + ")))")

#: the ScopeSet's rows per stored lexeme, each count stopped past the budget: an index-only range
#: of `memory_postings`' primary key per term (text equality is leakproof, so the planner may use
#: the index beneath row-level security; no operator a GIN index serves is)
COUNT_SQL = (
    "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM memory_postings p WHERE p.term = t.term AND " + _POSTINGS_IN_SET
    + " LIMIT %(cap)s) c) FROM unnest(" + listed("terms") + ") t(term)"
)

#: the terms to look up: the rarest first (ties by the term's bytes, as Python orders strings),
#: while the rows holding them (summed, an upper bound of their union) stay within `%(budget)s`
#: (MAX_CANDIDATES); none when even the rarest is held by more (a question of only common words
#: is left to the vector channel); terms held by no row drop. Every count is positive, so the
#: running sum grows with every term and `total <= budget` is exactly the prefix that fits. The
#: counts are MATERIALIZED: inlined, the planner repeats each count in the filter, sort and sum.
KEPT_SQL = (
    "WITH counts(term, n) AS MATERIALIZED (" + COUNT_SQL + "),"
    " kept AS (SELECT term, n FROM (SELECT term, n, sum(n) OVER (ORDER BY n, term COLLATE \"C\" ROWS UNBOUNDED PRECEDING) AS total"
    " FROM counts WHERE n > 0) c WHERE total <= %(budget)s)"
)

#: the lexical branch, in one statement with the counts and the budget: the rows the kept
#: lexemes' postings name, under the vector branch's WHERE, ranked by `ts_rank` (no collection
#: statistics) against the kept lexemes as one OR-query, rarest first (a word holds letters and
#: digits only, the tag hex digits and a colon: nothing inside the quotes needs escaping)
LEXICAL_SQL = (
    KEPT_SQL + ", lq AS MATERIALIZED (SELECT string_agg(chr(39) || term || chr(39), ' | ' ORDER BY n, term COLLATE \"C\")::tsquery AS query FROM kept)"
    " SELECT {columns}, -(m.embedding <#> %(q)s), ts_rank(m.lexical, k.query) AS lexical_rank FROM memories m, lq k"
    " WHERE m.id IN (SELECT p.memory_id FROM memory_postings p WHERE p.term IN (SELECT term FROM kept) AND " + _POSTINGS_IN_SET + ")"
    " AND " + _WHERE + " AND m.lexical @@ k.query ORDER BY lexical_rank DESC, m.seq LIMIT %(depth)s"
)


def lexical_statement(columns: str, *, with_kinds: bool) -> str:
    """The lexical branch for these row columns (the backend's, prefixed `m.`)."""
    return LEXICAL_SQL.format(columns=columns, kinds=" AND m.kind = ANY(%(kinds)s)" if with_kinds else "")


def rows_statement(columns: str, *, with_kinds: bool) -> str:
    """The rows of the fused winners (`%(top)s`, memory ids) under the vector branch's WHERE
    again: a row that left the ScopeSet's filters since it was ranked is not returned."""
    return "SELECT " + columns + " FROM memories m WHERE m.id = ANY(%(top)s) AND " + _WHERE.format(kinds=" AND m.kind = ANY(%(kinds)s)" if with_kinds else "")


def fuse_ranked(vector: Sequence[Ranked], lexical: Sequence[Ranked], limit: int) -> list[Ranked]:
    """The vector channel's candidates (best first) fused with the lexical channel's (best first,
    each scored with its own similarity), top `limit`, as (scope, memory id, fused score): every
    vector candidate stays one. On ids and scores only, so that only the winners' rows are read."""
    if not lexical:
        return list(vector[:limit])
    number: dict[str, int] = {}
    for _, mid, _ in (*vector, *lexical):
        number.setdefault(mid, len(number))
    ids = list(number)
    fused = fuse([(scope, number[mid], score) for scope, mid, score in vector], [(scope, number[mid], 0.0) for scope, mid, _ in lexical], limit,
                 {number[mid]: score for _, mid, score in lexical})
    return [(scope, ids[n], score) for scope, n, score in fused]
