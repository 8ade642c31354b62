"""The lookups every request makes on the PostgreSQL state are one round trip each.

A lone SELECT through `PgPool.run` / `run_sync` is wrapped in BEGIN and COMMIT: three round
trips. The per-request lookups (the API key, the session binding, the recall's sharing read, the
state's other fetches) go through `PgPool.read` / `read_sync` instead: the statements and one
Sync. Counted here at the pool on a real server, so a lookup that drifts back to a transaction
fails, whatever the timing of the machine.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, Iterator

import pytest

from adapters.scopes import ScopeKey
from bridge.state.postgres import PostgresState
from contract_tests.postgres_server import TestDatabase
from identity.errors import InvalidCredential
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore
from identity.providers.base import ApiKey
from identity.state.protocols import SessionBinding
from identity.storage.postgres import PgPool


@pytest.fixture
def state(pg_db: TestDatabase) -> Iterator[PostgresState]:
    s = PostgresState(pg_db.app_url, migrate_url=pg_db.owner_url, pool_size=2)
    try:
        yield s
    finally:
        s.close()


def _counting(pool: PgPool, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each of the pool's four entry points is called from now on."""
    calls: Counter[str] = Counter()
    for name in ("run", "run_sync", "read", "read_sync"):
        original = getattr(pool, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(pool, name, counted)
    return calls


def test_the_recalls_sharing_lookup_is_one_read(state: PostgresState, monkeypatch: pytest.MonkeyPatch) -> None:
    place = ScopeKey.agent("acme", "wukong", "alice")
    asyncio.run(state.shares.set_audience(place, "m1", frozenset({"bajie"}), 1.0))
    asyncio.run(state.teams.set_members("acme", "red", frozenset({"bajie"})))
    calls = _counting(state.pool, monkeypatch)
    reach = asyncio.run(state.shares.for_reader("acme", "alice", "bajie"))
    assert (reach.shared, reach.teams) == ({place: frozenset({"m1"})}, frozenset({"red"}))
    assert calls == Counter({"read": 1})


def test_state_fetches_are_reads_not_transactions(state: PostgresState, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(state.pool, monkeypatch)
    asyncio.run(state.grants.for_grantee("acme", "alice"))
    asyncio.run(state.teams.teams_of("acme", "bajie"))
    asyncio.run(state.shares.audience_of(ScopeKey.agent("acme", "wukong", "alice"), ["m1"]))
    assert calls == Counter({"read": 3})


def test_the_identity_lookups_of_every_request_are_one_read_each(state: PostgresState, monkeypatch: pytest.MonkeyPatch) -> None:
    sessions, keys = state.session_repository(), state.api_key_repository()
    bound = sessions.bind_if_absent(SessionBinding("acme", "s1", "fp", "alice", "wukong", None, time.time()))
    calls = _counting(state.pool, monkeypatch)
    assert sessions.get("acme", "s1") == bound
    assert sessions.get("acme", "nope") is None
    assert keys.lookup("no-such-key") is None
    assert keys.records("acme") == []
    assert calls == Counter({"read_sync": 4})


def test_the_doors_identity_checks_await_the_pool_and_never_block_the_loop(state: PostgresState, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service's door verifies an API key and a gateway nonce on its event loop: on
    PostgreSQL it awaits the pool (`read`, `run`) and never takes the blocking entry points, which
    would stall every other request the loop serves for the round trips."""
    store = ApiKeyStore(state.api_key_repository())
    issued = store.issue(tenant_id="acme", user_id="alice", agent_id="wukong")
    nonces = state.nonce_cache()
    provider = ApiKeyProvider(store)
    calls = _counting(state.pool, monkeypatch)
    on_loop: Counter[str] = Counter()  # the blocking entry points, called from a thread running an event loop
    for name in ("run_sync", "read_sync"):
        counted = getattr(state.pool, name)

        def watched(*args: Any, _name: str = name, _counted: Any = counted, **kwargs: Any) -> Any:
            if asyncio._get_running_loop() is not None:
                on_loop[_name] += 1
            return _counted(*args, **kwargs)

        monkeypatch.setattr(state.pool, name, watched)

    async def door() -> None:
        for _ in range(3):
            identity = await provider.bound_identity(ApiKey(issued.key))
            assert (identity.tenant_id, identity.user_id, identity.agent_id) == ("acme", "alice", "wukong")
        with pytest.raises(InvalidCredential):
            await provider.bound_identity(ApiKey(issued.key[:-2] + ("AA" if not issued.key.endswith("AA") else "BB")))
        # many concurrent checks of one nonce: exactly one is first
        firsts = await asyncio.gather(*(nonces.check_and_remember_async("nonce-0001", time.time() + 60) for _ in range(6)))
        assert sorted(firsts) == [False] * 5 + [True]

    asyncio.run(door())
    assert not on_loop, on_loop
    # four key lookups, six nonce transactions, and the key's last use noted once (a write, in a worker thread)
    assert calls == Counter({"read": 4, "run": 6, "run_sync": 1}), calls
