"""Identity state on PostgreSQL: the session-registry tests the in-memory and SQLite registries
pass (imported and re-run over PostgreSQL), the nonce-cache guarantees on SQLite and PostgreSQL
alike, API keys, and the races only a shared database has (replicas = separate pools)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Iterator

import psycopg
import pytest

from contract_tests.postgres_server import TestDatabase
from identity.errors import Conflict, InvalidCredential, InvalidInput, NonceCacheFull, Unavailable
from identity.state.nonces import SqliteNonceCache
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore, GatewayProvider, GatewayRequest, sign_gateway_headers
from identity.sessions import SessionBinder
from identity.state.protocols import NonceCache, SessionBinding
from identity.state.postgres import PgApiKeyRepository, PgNonceCache, PgSessionRepository, IDENTITY_MIGRATIONS
from identity.storage.postgres import PgPool, migrate
from tests.identity.test_sessions import (  # noqa: F401  (re-run here over PostgreSQL through the `registry` fixture below)
    test_any_access_deciding_change_cannot_continue,
    test_first_use_binds_and_same_identity_continues,
    test_fork_child_cannot_be_continued_by_another_user,
    test_fork_keeps_identity_and_records_parent,
    test_forking_across_tenants_refused,
    test_forking_an_unknown_session_refused,
    test_forking_someone_elses_session_refused,
    test_mismatch_message_does_not_reveal_the_owner,
    test_other_user_cannot_continue_a_bound_session,
    test_registries_satisfy_the_protocol,
    test_session_ids_are_namespaced_per_tenant,
    test_start_session_creates_fresh_bound_session,
)
from tests.postgres.pgkit import SCHEMA, as_app

SECRET = b"s" * 32
T0 = 1_700_000_000.0


def _pool(db: TestDatabase, size: int = 2) -> PgPool:
    """One replica's pool over a migrated database."""
    migrate(db.owner_url, IDENTITY_MIGRATIONS, schema=SCHEMA, runtime_role="vb_test_app")
    return PgPool(db.app_url, schema=SCHEMA, max_size=size)


@pytest.fixture
def registry(pg_db: TestDatabase) -> Iterator[SessionBinder]:
    reg = SessionBinder(PgSessionRepository(_pool(pg_db), owns_pool=True))
    yield reg
    reg.close()


# -- sessions -------------------------------------------------------------------------------
def test_replicas_racing_to_bind_one_session_agree_on_one_winner(pg_db: TestDatabase) -> None:
    replicas = [PgSessionRepository(_pool(pg_db, 1), owns_pool=True) for _ in range(6)]
    barrier, winners = threading.Barrier(len(replicas)), []

    def bind(n: int) -> None:
        barrier.wait()
        winners.append(replicas[n].bind_if_absent(SessionBinding("acme", "s-race", f"fp{n}", f"u{n}", "a", None, T0)).fingerprint)

    threads = [threading.Thread(target=bind, args=(n,)) for n in range(len(replicas))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in replicas:
        r.close()
    assert len(winners) == len(replicas) and len(set(winners)) == 1


def test_runtime_role_cannot_rebind_or_delete_a_session(pg_db: TestDatabase) -> None:
    repo = PgSessionRepository(_pool(pg_db), owns_pool=True)
    repo.bind_if_absent(SessionBinding("acme", "s1", "fp-alice", "alice", "a", None, T0))
    repo.close()
    with as_app(pg_db) as conn:
        for statement in ("UPDATE session_bindings SET fingerprint = 'fp-mallory'", "DELETE FROM session_bindings"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


# -- nonces (the same guarantees as tests/identity/test_nonces.py, on both shared caches) ---
class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgres"])
def make_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator:  # type: ignore[type-arg]
    made: list = []  # type: ignore[type-arg]

    def make(clock: Clock, **kwargs: object) -> NonceCache:
        if request.param == "sqlite":
            cache: object = SqliteNonceCache(tmp_path / "nonces.sqlite3", clock, **kwargs)  # type: ignore[arg-type]
        else:
            cache = PgNonceCache(_pool(request.getfixturevalue("pg_db")), clock, owns_pool=True, **kwargs)  # type: ignore[arg-type]
        made.append(cache)
        return cache  # type: ignore[return-value]

    yield make
    for cache in made:
        cache.close()


def test_live_nonce_cannot_be_replayed_on_a_shared_cache(make_cache) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    cache = make_cache(clock)
    assert isinstance(cache, NonceCache)
    assert cache.check_and_remember("nonce-0001", T0 + 10) is True
    assert cache.check_and_remember("nonce-0001", T0 + 10) is False
    clock.now += 9.5
    assert cache.check_and_remember("nonce-0001", T0 + 50) is False
    clock.now = T0 + 10.5  # expired: may be forgotten and used again
    assert cache.check_and_remember("nonce-0001", clock.now + 10) is True
    assert cache.check_and_remember("nonce-0001", clock.now + 10) is False


def test_full_shared_cache_fails_closed_without_evicting_live_nonces(make_cache) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    cache = make_cache(clock, max_entries=20)
    for i in range(20):
        assert cache.check_and_remember(f"live-{i:04d}", T0 + 60)
    with pytest.raises(NonceCacheFull) as err:
        cache.check_and_remember("one-too-many", T0 + 60)
    assert isinstance(err.value, Unavailable) and err.value.retryable and err.value.retry_after
    for i in range(20):
        assert cache.check_and_remember(f"live-{i:04d}", T0 + 60) is False
    clock.now = T0 + 61
    assert cache.check_and_remember("one-too-many", clock.now + 60) is True


def test_malformed_nonce_is_invalid_input_on_postgres(pg_db: TestDatabase) -> None:
    cache = PgNonceCache(_pool(pg_db), lambda: T0, owns_pool=True)
    try:
        for bad in (None, "", 12345, "x" * 1000, "\ud800abc", "nul\x00nonce"):
            with pytest.raises(InvalidInput):
                cache.check_and_remember(bad, T0 + 10)  # type: ignore[arg-type]
        for expiry in (None, "soon", float("nan"), float("inf"), True):
            with pytest.raises(InvalidInput):
                cache.check_and_remember("nonce-0001", expiry)  # type: ignore[arg-type]
    finally:
        cache.close()


def test_replicas_racing_on_one_nonce_accept_it_once(pg_db: TestDatabase) -> None:
    replicas = [PgNonceCache(_pool(pg_db, 1), lambda: T0, owns_pool=True) for _ in range(6)]
    barrier, answers = threading.Barrier(len(replicas)), []

    def check(cache: PgNonceCache) -> None:
        barrier.wait()
        answers.append(cache.check_and_remember("raced-nonce", T0 + 60))

    threads = [threading.Thread(target=check, args=(c,)) for c in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in replicas:
        c.close()
    assert sorted(answers) == [False] * 5 + [True]


def test_two_gateway_replicas_on_postgres_refuse_a_replay_across_replicas(pg_db: TestDatabase) -> None:
    replicas = [GatewayProvider(SECRET, nonce_cache=PgNonceCache(_pool(pg_db, 1), lambda: T0, owns_pool=True), clock=lambda: T0) for _ in range(2)]
    headers = sign_gateway_headers(SECRET, method="GET", path="/v1/recall", tenant_id="acme", user_id="u1", agent_id="a",
                                   timestamp=int(T0), nonce="replica-nonce-1")
    request = GatewayRequest(method="GET", path="/v1/recall", headers=headers)
    assert asyncio.run(replicas[0].authenticate(request)).user_id == "u1"
    with pytest.raises(InvalidCredential, match="replayed"):
        asyncio.run(replicas[1].authenticate(request))


# -- API keys -------------------------------------------------------------------------------
async def test_api_key_issued_on_one_replica_authenticates_and_revokes_on_another(pg_db: TestDatabase) -> None:
    one, two = (ApiKeyStore(PgApiKeyRepository(_pool(pg_db), owns_pool=True)) for _ in range(2))
    try:
        issued = one.issue(tenant_id="acme", user_id="svc", agent_id="indexer", department_ids=["eng"], roles=["writer"], label="x")
        identity = await ApiKeyProvider(two).authenticate(ApiKey(issued.key))
        assert (identity.user_id, identity.department_ids, identity.roles) == ("svc", frozenset({"eng"}), frozenset({"writer"}))
        assert [r.key_id for r in two.repository.records("acme")] == [issued.record.key_id]
        assert two.revoke(issued.record.key_id) is True and one.revoke(issued.record.key_id) is False
        with pytest.raises(InvalidCredential):
            await ApiKeyProvider(one).authenticate(ApiKey(issued.key))
        with pytest.raises(Conflict):
            one.repository.insert(one.repository.lookup(issued.record.key_id))  # type: ignore[arg-type]
    finally:
        one.close()
        two.close()


def test_runtime_role_cannot_rewrite_a_key_verifier_or_unrevoke_it_by_column(pg_db: TestDatabase) -> None:
    store = ApiKeyStore(PgApiKeyRepository(_pool(pg_db), owns_pool=True))
    store.issue(tenant_id="acme", user_id="svc", agent_id="indexer", label="x")
    store.close()
    with as_app(pg_db) as conn:
        for statement in ("UPDATE api_keys SET digest = 'x'::bytea", "UPDATE api_keys SET user_id = 'root', roles = '{admin}'", "DELETE FROM api_keys"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
