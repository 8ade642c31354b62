"""The share and team repositories on PostgreSQL: the SQLite/memory assertions of
tests/bridge/test_sharing_state.py (imported, literally the same), over the PostgreSQL state."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio

from bridge.state.postgres import PostgresState
from contract_tests.postgres_server import TestDatabase
from tests.bridge.test_sharing_state import (  # noqa: F401  (re-run here over `state` below)
    test_a_forgotten_or_erased_memory_loses_its_share,
    test_a_share_reaches_exactly_its_audience_of_the_same_user,
    test_apply_team_membership_loads_role_file_data_and_refuses_bad_ids,
    test_for_reader_is_shared_with_and_teams_of_in_one_answer,
    test_narrowing_a_share_is_visible_to_the_next_read,
    test_team_membership_is_per_tenant_and_replaced_whole,
)


@pytest_asyncio.fixture
async def state(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[object]:
    db: TestDatabase = request.getfixturevalue("pg_db")
    s = PostgresState(db.app_url, migrate_url=db.owner_url, pool_size=2)
    try:
        yield s
    finally:
        s.close()


async def test_a_second_replica_sees_a_narrowed_share_at_its_next_read(state, pg_db) -> None:  # type: ignore[no-untyped-def]
    """Nothing is cached per process: replica B reads what replica A just narrowed."""
    from adapters.scopes import ScopeKey

    other = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=1)
    try:
        key = ScopeKey.agent("acme", "wukong", "alice")
        await state.shares.set_audience(key, "m1", frozenset({"bajie"}), 1.0)
        assert await other.shares.shared_with("acme", "alice", "bajie") == {key: frozenset({"m1"})}
        await state.shares.set_audience(key, "m1", frozenset(), 2.0)
        assert await other.shares.shared_with("acme", "alice", "bajie") == {}
    finally:
        other.close()
