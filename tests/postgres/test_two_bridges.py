"""Two bridges (two replicas) on one PostgreSQL database share everything that authorises:
grants, gateway nonces, session bindings, API keys, and one audit sequence. Each "replica" here
has its own pools, its own backend and its own process-local caches — exactly what two
`viking-bridge serve` processes would have — so anything a replica kept only in memory would
show up as a disagreement. (The two-process HTTP test belongs with the service.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncIterator

import pytest
import pytest_asyncio

from adapters.postgres import PostgresBackend
from bridge.errors import NotPermitted
from bridge.facade import MemoryBridge
from bridge.state.postgres import PostgresState
from contract_tests.postgres_server import TestDatabase
from identity.errors import InvalidCredential, SessionIdentityMismatch
from identity.model import MemoryIdentity
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore, GatewayProvider, GatewayRequest, sign_gateway_headers
from identity.sessions import SessionBinder

SECRET = b"g" * 32


@dataclass
class Replica:
    bridge: MemoryBridge
    state: PostgresState
    keys: ApiKeyStore
    gateway: GatewayProvider

    async def login(self, user: str, **fields: object) -> MemoryIdentity:
        issued = self.keys.issue(tenant_id="acme", user_id=user, agent_id="assistant", label="t", **fields)  # type: ignore[arg-type]
        return await ApiKeyProvider(self.keys).authenticate(ApiKey(issued.key))


async def _replica(db: TestDatabase) -> Replica:
    state = PostgresState(db.app_url, migrate_url=db.owner_url, pool_size=3)
    backend = PostgresBackend(db.app_url, migrate_url=db.owner_url, pool_size=3)
    await backend.open()
    bridge = MemoryBridge(backend, state, sessions=SessionBinder(state.session_repository()))
    return Replica(bridge, state, ApiKeyStore(state.api_key_repository()), GatewayProvider(SECRET, nonce_cache=state.nonce_cache()))


@pytest_asyncio.fixture
async def replicas(pg_db: TestDatabase) -> AsyncIterator[tuple[Replica, Replica]]:
    one, two = await _replica(pg_db), await _replica(pg_db)
    try:
        yield one, two
    finally:
        for r in (one, two):
            await r.bridge.aclose()  # closes the backend, then the state's pool (sessions share it)


async def test_grant_issued_on_one_replica_is_honoured_and_revoked_on_the_other(replicas: tuple[Replica, Replica]) -> None:
    one, two = replicas
    admin = await one.login("root", roles=["admin"])
    erin = await one.login("erin", department_ids=["eng"], roles=["approver"])
    carol = await two.login("carol", department_ids=["sales"])  # a key issued on replica two ...
    text = "Engineering standard: incident reviews are blameless"
    eng = await one.bridge.remember(erin, text, "standard")
    with pytest.raises(NotPermitted):
        await two.bridge.recall(carol, text, include_scopes=["acme/dept/eng"])
    grant = await one.bridge.grant(admin, "carol", "acme/dept/eng", ttl_seconds=600, reason="audit")
    seen = await two.bridge.recall(carol, text, include_scopes=["acme/dept/eng"])
    assert [(i.memory_id, i.grant_id) for i in seen.items] == [(eng.memory_id, grant.grant_id)]
    await two.bridge.revoke_grant(admin, grant.grant_id)
    with pytest.raises(NotPermitted):
        await one.bridge.recall(carol, text, include_scopes=["acme/dept/eng"])


async def test_gateway_nonce_used_on_one_replica_is_refused_on_the_other(replicas: tuple[Replica, Replica]) -> None:
    one, two = replicas
    headers = sign_gateway_headers(SECRET, method="POST", path="/v1/recall", tenant_id="acme", user_id="alice", agent_id="a", nonce="n-shared-1")
    request = GatewayRequest("POST", "/v1/recall", headers)
    assert (await one.gateway.authenticate(request)).user_id == "alice"
    with pytest.raises(InvalidCredential, match="replayed"):
        await two.gateway.authenticate(request)


async def test_session_bound_on_one_replica_is_enforced_on_the_other(replicas: tuple[Replica, Replica]) -> None:
    one, two = replicas

    async def via_gateway(user: str, nonce: str) -> MemoryIdentity:
        headers = sign_gateway_headers(SECRET, method="POST", path="/v1/recall", tenant_id="acme", user_id=user, agent_id="a",
                                       session_id="s-shared", nonce=nonce)
        return await one.gateway.authenticate(GatewayRequest("POST", "/v1/recall", headers))

    alice, mallory = await via_gateway("alice", "nonce-one-1"), await via_gateway("mallory", "nonce-two-2")
    await one.bridge.remember(alice, "alice's note in the shared session", "note")  # binds s-shared to alice
    with pytest.raises(SessionIdentityMismatch):
        await two.bridge.recall(mallory, "alice's note")
    assert (await two.bridge.recall(alice, "alice's note")).items  # the owner continues it anywhere


async def test_audit_log_is_one_sequence_across_replicas(replicas: tuple[Replica, Replica]) -> None:
    one, two = replicas
    admin = await one.login("root", roles=["admin"])
    writes = []
    for n in range(6):
        replica = (one, two)[n % 2]
        writes.append(await replica.bridge.remember(admin, f"tenant note number {n}", "note", visibility="tenant"))
    from_one = [e for e in await one.bridge.audit_events(admin, action="write", limit=50)]
    from_two = [e for e in await two.bridge.audit_events(admin, action="write", limit=50)]
    assert [e.seq for e in from_one] == [e.seq for e in from_two], "the replicas see different audit logs"
    seqs = [e.seq for e in reversed(from_one)]
    assert seqs == sorted(set(seqs)) and len(seqs) == 6, f"not one increasing sequence: {seqs}"
    assert [e.memory_ids[0] for e in reversed(from_one)] == [w.memory_id for w in writes]  # in the order they happened
