"""PostgreSQL + pgvector memory backend: the ScopeSet in every WHERE clause AND in the
transaction (`SET LOCAL`), enforced by row-level security for a runtime role that cannot bypass it."""

from adapters.postgres.backend import PostgresBackend

__all__ = ["PostgresBackend"]
