"""Physical locality by scope for exact vector search: each scope's vectors side by side.

Why: rows are appended to the heap in arrival order, so a scope's rows are spread over the whole
table and an exact search over a ScopeSet read about one heap page per permitted row (measured:
1,036 rows, 1,063 pages, at 50k memories). `CLUSTER` fixes that only until the next writes, and it is
an operator step that locks the table. Instead, migration 5 creates a covering B-tree,
`memories_scope_vectors (scope, status) INCLUDE (id, seq, expires_at, embedding)`, that PostgreSQL
keeps in scope order on every insert: an index-only scan of the ScopeSet's scopes reads their
vectors from a few contiguous leaf pages (about five rows a page at 384 dimensions) and never
touches another scope's (measured: 357 pages instead of 1,082 for the same query). It holds what
the vector branch and the row-level-security policy read (scope, id, status, expiry, the vector);
a search filtered by kind reads the kind from the heap, as before.

Limits, and why they are checked in the migration: a B-tree entry must fit in a third of a page
(2,704 bytes). The index is built only when the vector column holds at most MAX_DIMENSION
dimensions (read from the column itself, so an existing store is judged by what it stores), and
it is partial: rows whose scope key is longer than MAX_SCOPE_BYTES bytes are left out (their
scopes are searched through `memories_by_scope`, in a branch of their own). Both keep every
entry under the limit, so no insert can fail because of this index. Without the index (larger
vectors) the search takes the same plan shape through `memories_by_scope`, exact as ever.

Fresh rows: an index-only scan still visits the heap for pages the visibility map does not mark
all-visible, so the migration asks autovacuum to visit the table after 2% new rows (not 20%).

Safe on an existing store: `CREATE INDEX IF NOT EXISTS` inside the migration's transaction (it
blocks writes while it builds: minutes for millions of rows, noted in docs/capacity.md).
"""

from __future__ import annotations

__all__ = ["MIGRATION", "MAX_DIMENSION", "MAX_SCOPE_BYTES", "INDEXED_SCOPE"]

#: vectors up to this many dimensions are held in the covering index (4 bytes each)
MAX_DIMENSION = 512
#: scope keys up to this many UTF-8 bytes are in the covering index
MAX_SCOPE_BYTES = 512
#: the index's predicate, repeated verbatim in the search branch so the planner can use it
INDEXED_SCOPE = f"octet_length(scope) <= {MAX_SCOPE_BYTES}"

#: appended to MEMORY_MIGRATIONS (adapters/postgres/schema.py)
MIGRATION = f"""
    DO $$
    BEGIN
        IF (SELECT atttypmod FROM pg_catalog.pg_attribute
            WHERE attrelid = 'memories'::regclass AND attname = 'embedding') <= {MAX_DIMENSION} THEN
            CREATE INDEX IF NOT EXISTS memories_scope_vectors ON memories (scope, status)
                INCLUDE (id, seq, expires_at, embedding) WHERE {INDEXED_SCOPE};
        END IF;
    END $$;
    ALTER TABLE memories SET (autovacuum_vacuum_insert_scale_factor = 0.02);
"""
