"""The PostgreSQL fixtures of tests/postgres (one real server per session, a database per test)."""

from tests.postgres.conftest import pg_db, pg_server  # noqa: F401  (fixtures, re-exported for this directory)
