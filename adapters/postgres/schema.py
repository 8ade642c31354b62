"""The PostgreSQL memory store's schema: the table, its row-level-security policy, the grants.

The wall inside the database. `memories` has ROW LEVEL SECURITY enabled AND forced (the table
owner is bound by it too) with one policy: a row is visible, updatable and deletable only when
its `scope` is one of the scope keys the current transaction declared with
`set_config('viking_bridge.scopes', ..., true)` (= `SET LOCAL`), or when its (scope, id) pair is
one the transaction declared in `viking_bridge.memories` (a ScopeSet entry restricted to
injected memory ids). New rows must land in a declared scope (WITH CHECK). A transaction that
declared nothing sees nothing: the setting is unset (NULL) or empty, and `= ANY` of an empty or
NULL array is never true. So a query that lost its WHERE clause still returns only rows of the
ScopeSet — provided the runtime role is neither a superuser nor BYPASSRLS, which the backend
checks at open and refuses otherwise.

Settings format: scope keys joined by U+001F; pairs are `scope U+001E id`. Neither character can
occur in a ScopeKey (the id grammar forbids control characters); memory ids that contain them
are dropped before a setting is built (they cannot be ours).

`memory_scopes` counts rows per scope (kept by a SECURITY DEFINER trigger), so `list_scopes` can
name a tenant's scopes without reading any memory row. Scope names carry user, workspace and team
ids, so it has row-level security too (migration 3): the runtime role sees the rows of the one
tenant its transaction declared in `viking_bridge.tenant`, and nothing when it declared none; the
total row count comes from `memory_row_count()`, a definer function that returns a number only.
`backend_meta` holds the store id, the embedder signature and the cursor key shared by every
replica. Since migration 3 the runtime role cannot SELECT it: it reads it once, at open, through
the definer function `backend_meta_read()`, so no filterless query, export or view of the role's
tables carries the key that signs every list cursor.
Migration 5 adds the covering index of exact search (adapters/postgres/locality.py); migration 6
tags the lexical channel's lexemes by scope and keeps `memory_postings` (one row per stored
lexeme and memory, row-level security like `memories`, read-only for the runtime role) in step by
a definer trigger (adapters/postgres/lexical.py).
Templates: `{runtime}` the runtime role, `{dim}` the vector dimension.
"""

from __future__ import annotations

from adapters.postgres.lexical import MIGRATION as LEXICAL_MIGRATION
from adapters.postgres.lexical import SCOPED_MIGRATION as SCOPED_LEXICAL_MIGRATION
from adapters.postgres.lists import SEP
from adapters.postgres.locality import MIGRATION as LOCALITY_MIGRATION

__all__ = ["MEMORY_MIGRATIONS", "COMPONENT", "SCOPES_SETTING", "MEMORIES_SETTING", "IDS_SETTING", "TENANT_SETTING", "SEP", "PAIR"]

COMPONENT = "memories"
SCOPES_SETTING = "viking_bridge.scopes"
MEMORIES_SETTING = "viking_bridge.memories"
IDS_SETTING = "viking_bridge.memory_ids"
TENANT_SETTING = "viking_bridge.tenant"
PAIR = "\x1e"

MEMORY_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE memories (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text PRIMARY KEY,
        scope text NOT NULL CHECK (scope <> ''),
        tenant_id text,
        content text NOT NULL,
        kind text NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'pending', 'superseded', 'forgotten')),
        confidence double precision NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
        provenance text NOT NULL,
        subject_user_id text,
        metadata text NOT NULL,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        idempotency_key text NOT NULL,
        content_hash text NOT NULL,
        embedding vector({dim}) NOT NULL,
        UNIQUE (scope, idempotency_key)
    );
    -- vectors stay inline and uncompressed: a recall reads every permitted row's vector, and a
    -- TOASTed vector costs several buffer reads per row
    ALTER TABLE memories ALTER COLUMN embedding SET STORAGE PLAIN;
    CREATE INDEX memories_by_scope ON memories (scope, seq);
    CREATE INDEX memories_by_subject ON memories (tenant_id, subject_user_id);
    ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
    ALTER TABLE memories FORCE ROW LEVEL SECURITY;
    CREATE POLICY memories_in_scope_set ON memories FOR ALL
        -- each setting is read once per statement (a scalar subquery is an InitPlan), not per row
        USING (
            scope = ANY ((SELECT string_to_array(current_setting('viking_bridge.scopes', true), chr(31)))::text[])
            OR (id = ANY ((SELECT string_to_array(current_setting('viking_bridge.memory_ids', true), chr(31)))::text[])
                AND (scope || chr(30) || id) = ANY ((SELECT string_to_array(current_setting('viking_bridge.memories', true), chr(31)))::text[]))
        )
        WITH CHECK (scope = ANY ((SELECT string_to_array(current_setting('viking_bridge.scopes', true), chr(31)))::text[]));

    CREATE TABLE memory_scopes (scope text PRIMARY KEY, tenant_id text, rows bigint NOT NULL);
    CREATE INDEX memory_scopes_by_tenant ON memory_scopes (tenant_id);
    CREATE FUNCTION memory_scopes_count() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog AS $$
    DECLARE
        target regclass := format('%I.memory_scopes', TG_TABLE_SCHEMA)::regclass;
    BEGIN
        IF TG_OP = 'INSERT' THEN
            EXECUTE format('INSERT INTO %s AS s (scope, tenant_id, rows) VALUES ($1, $2, 1)'
                           ' ON CONFLICT (scope) DO UPDATE SET rows = s.rows + 1', target) USING NEW.scope, NEW.tenant_id;
        ELSE
            EXECUTE format('UPDATE %s SET rows = rows - 1 WHERE scope = $1', target) USING OLD.scope;
            EXECUTE format('DELETE FROM %s WHERE scope = $1 AND rows <= 0', target) USING OLD.scope;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_count_scopes AFTER INSERT OR DELETE ON memories FOR EACH ROW EXECUTE FUNCTION memory_scopes_count();
    REVOKE ALL ON FUNCTION memory_scopes_count() FROM PUBLIC;

    CREATE TABLE backend_meta (name text PRIMARY KEY, value text NOT NULL);

    GRANT SELECT, INSERT, UPDATE, DELETE ON memories TO {runtime};
    GRANT SELECT ON memory_scopes, backend_meta TO {runtime};
    """,
    # 2: expiry. A memory with expires_at <= the query's `now` is never a candidate (every search
    # branch's WHERE); the partial index holds only rows that expire, for the purge and the filter.
    """
    ALTER TABLE memories ADD COLUMN expires_at double precision;
    CREATE INDEX memories_expiring ON memories (scope, expires_at) WHERE expires_at IS NOT NULL;
    """,
    # 3: the runtime role's reach beyond `memories`. Scope names only for the declared tenant
    # (ENABLE without FORCE: the counting trigger runs as the owner and keeps every row); the
    # store's metadata, cursor key included, only through a definer function read at open. Both
    # functions pin their search path to the schema they were created in (FROM CURRENT: this
    # schema, the vector extension's, pg_catalog) and name catalog functions in full.
    """
    ALTER TABLE memory_scopes ENABLE ROW LEVEL SECURITY;
    CREATE POLICY memory_scopes_of_declared_tenant ON memory_scopes FOR SELECT TO {runtime}
        USING (tenant_id = (SELECT current_setting('viking_bridge.tenant', true)));
    CREATE FUNCTION memory_row_count() RETURNS bigint LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
        AS $$ SELECT pg_catalog.sum(rows)::bigint FROM memory_scopes $$;
    REVOKE ALL ON FUNCTION memory_row_count() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION memory_row_count() TO {runtime};

    REVOKE SELECT ON backend_meta FROM {runtime};
    CREATE FUNCTION backend_meta_read() RETURNS TABLE (name text, value text) LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path FROM CURRENT AS $$ SELECT m.name, m.value FROM backend_meta m $$;
    REVOKE ALL ON FUNCTION backend_meta_read() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION backend_meta_read() TO {runtime};
    """,
    # 4: the lexical channel (adapters/postgres/lexical.py): a generated tsvector column, so every
    # insert, content update and delete keeps it in step, and a GIN index over it.
    LEXICAL_MIGRATION,
    # 5: each scope's vectors side by side (adapters/postgres/locality.py): a covering index read
    # scope by scope, so a search touches the ScopeSet's index pages only, not a heap page per row.
    LOCALITY_MIGRATION,
    # 6: the lexical channel's lexemes tagged by scope (adapters/postgres/lexical.py), so a word's
    # postings, and their counts, are per scope.
    SCOPED_LEXICAL_MIGRATION,
)
