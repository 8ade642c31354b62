"""Fixtures of the PostgreSQL tests: ONE real server per test session, a fresh database per test.

The server comes from `contract_tests.postgres_server` (pgserver's PostgreSQL 16 + pgvector,
run as `nobody` under root; or an existing server by VIKING_BRIDGE_TEST_POSTGRES_URL). Where
neither can be had, every test here is skipped saying why — never mocked.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from contract_tests.postgres_server import PostgresForTests, TestDatabase, shared_server, unavailable_reason


@pytest.fixture(scope="session")
def pg_server() -> PostgresForTests:
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"no PostgreSQL for these tests: {reason}")
    return shared_server()


@pytest.fixture
def pg_db(pg_server: PostgresForTests) -> Iterator[TestDatabase]:
    """A fresh, empty database: `owner_url` migrates, `app_url` is the runtime role."""
    db = pg_server.create_database()
    try:
        yield db
    finally:
        pg_server.drop_database(db)
