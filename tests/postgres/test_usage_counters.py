"""Storage-quota counters on the shared PostgreSQL state (UsageLedger, bridge/state/protocols.py): two replicas
reserving at once never take more than the quota; a refusal changes nothing; release floors at 0."""

from __future__ import annotations

import asyncio
import threading

import pytest

from bridge.errors import QuotaExceeded
from bridge.policy.quotas import QuotaLimits, Usage
from bridge.state.postgres import PostgresState
from contract_tests.postgres_server import TestDatabase


def test_two_replicas_reserving_at_once_never_pass_the_quota(pg_db: TestDatabase) -> None:
    replicas = [PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=4) for _ in range(2)]
    results: list[object] = []
    barrier = threading.Barrier(len(replicas))

    def writer(state: PostgresState, user: str) -> None:
        async def burst() -> list[object]:
            calls = [state.usage.reserve("acme", user, Usage(1, 100), QuotaLimits(max_memories=9, max_bytes=10_000), QuotaLimits(max_memories=6))
                     for _ in range(8)]
            return await asyncio.gather(*calls, return_exceptions=True)

        barrier.wait()
        results.extend(asyncio.run(burst()))

    try:
        threads = [threading.Thread(target=writer, args=(s, u)) for s, u in zip(replicas, ("alice", "bob"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r is None or isinstance(r, QuotaExceeded) for r in results), results
        assert sum(r is None for r in results) == 9, "the tenant quota of 9 was passed or not filled"
        tenant = asyncio.run(replicas[1].usage.usage("acme"))
        users = [asyncio.run(replicas[0].usage.usage("acme", u)) for u in ("alice", "bob")]
        assert tenant == Usage(9, 900) and sum(u.memories for u in users) == 9 and all(u.memories <= 6 for u in users)
        asyncio.run(replicas[0].usage.release("acme", "alice", Usage(100, 100_000)))
        assert asyncio.run(replicas[1].usage.usage("acme", "alice")) == Usage(0, 0)
        assert asyncio.run(replicas[1].usage.usage("acme")).memories >= 0
    finally:
        for s in replicas:
            s.close()


def test_a_refused_reservation_changes_no_counter(pg_db: TestDatabase) -> None:
    state = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    try:
        asyncio.run(state.usage.reserve("acme", "alice", Usage(1, 10), QuotaLimits(), QuotaLimits(max_bytes=15)))
        with pytest.raises(QuotaExceeded) as refused:
            asyncio.run(state.usage.reserve("acme", "alice", Usage(1, 10), QuotaLimits(), QuotaLimits(max_bytes=15)))
        assert (refused.value.level, refused.value.measure) == ("user", "bytes")
        assert asyncio.run(state.usage.usage("acme")) == Usage(1, 10) == asyncio.run(state.usage.usage("acme", "alice"))
    finally:
        state.close()
