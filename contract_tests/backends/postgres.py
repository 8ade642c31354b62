"""Contract-suite factory for the PostgreSQL + pgvector backend: a fresh, EMPTY database per test.

The server is real (contract_tests/postgres_server.py: started once per test process from the
pgserver wheel, or an existing one by VIKING_BRIDGE_TEST_POSTGRES_URL). Each factory call makes a
new database, migrates it as the owner role, serves it as the runtime role (no superuser, no
BYPASSRLS, not the owner — the backend refuses anything else) and drops the database on exit.
"""

from __future__ import annotations

import contextlib
from typing import AsyncIterator

from contract_tests.postgres_server import TestDatabase, shared_server, unavailable_reason
from contract_tests.registry import register_adapter

_DATABASES: dict[int, TestDatabase] = {}


async def _insert_unscoped(backend: object, tenant_id: str, content: str) -> None:
    """A raw row with no usable scope (as a buggy import might leave), written as the server's
    admin (who bypasses RLS) — the runtime role could not write it at all."""
    import psycopg

    db = _DATABASES[id(backend)]
    (vector,) = await backend.embedder.embed([content])  # type: ignore[attr-defined]
    with psycopg.connect(db.admin_url, autocommit=True) as conn:
        conn.execute("SET search_path TO viking_bridge, public")
        conn.execute(
            "INSERT INTO memories (id, scope, tenant_id, content, kind, status, confidence, provenance, subject_user_id, metadata,"
            " created_at, updated_at, idempotency_key, content_hash, embedding) VALUES (%s, %s, NULL, %s, 'note', 'active', 1.0,"
            " %s, NULL, %s, 0, 0, %s, '', %s::vector)",
            ("unscoped-" + content[:8].encode().hex(), "unscoped", content, '{"author_user_id": "nobody", "author_agent_id": "nobody"}',
             '{"user_id": "alice", "tenant_id": "%s"}' % tenant_id, "unscoped-" + content[:8].encode().hex(),
             "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"),
        )


@register_adapter("postgres", description="PostgreSQL 16 + pgvector, RLS-enforced, a fresh database per test",
                  unavailable_reason=unavailable_reason, insert_unscoped=_insert_unscoped)
@contextlib.asynccontextmanager
async def postgres_backend() -> AsyncIterator[object]:
    from adapters.postgres import PostgresBackend

    server = shared_server()
    db = server.create_database()
    backend = PostgresBackend(db.app_url, migrate_url=db.owner_url, pool_size=4)
    try:
        await backend.open()
        _DATABASES[id(backend)] = db
        yield backend
    finally:
        _DATABASES.pop(id(backend), None)
        await backend.aclose()
        server.drop_database(db)
