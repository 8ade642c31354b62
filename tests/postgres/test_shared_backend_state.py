"""Replicas in front of one Viking collection or one OpenViking server share the backend's own
state on PostgreSQL: the Viking write ledger (a write retried on another replica is not added
twice) and the OpenViking per-user keys (one key minted per principal, whichever replica asks).

Two backends on one database stand for two replicas here (the same classes `serve` opens; the
two-process test is tests/postgres/test_two_services.py's pattern, in test_shared_backend_services.py).
"""

from __future__ import annotations

import asyncio
from collections import Counter

from cryptography.fernet import Fernet

from adapters.base import NewMemory, Provenance
from adapters.openviking.client import SecretKey
from adapters.openviking.keystore_postgres import PgKeyStore
from adapters.scopes import ScopeKey
from adapters.viking.ledger_postgres import PgWriteLedger
from contract_tests.backends.viking import make_simulated
from contract_tests.postgres_server import TestDatabase
from contract_tests.viking_simulator import VikingSimulator

WS = ScopeKey.workspace("acme", "alpha")


def _note(text: str) -> NewMemory:
    return NewMemory(content=text, kind="fact", provenance=Provenance(author_user_id="alice", author_agent_id="coder"))


async def test_one_write_sent_to_two_replicas_at_once_lands_once(pg_db: TestDatabase) -> None:
    """The same write (same idempotency key) reaches two replicas at the same moment, with a slow
    service and a search lag (the add of one is not yet visible to the other): one copy lands."""
    sim = VikingSimulator(sleep=asyncio.sleep)
    sim.search_lag = 3600.0  # the first replica's add is never searchable in time for the second
    _, one = make_simulated(sim, clock=lambda: sim.now)
    _, two = make_simulated(sim, clock=lambda: sim.now)
    for backend in (one, two):
        backend.ledger.close()
        backend.ledger = PgWriteLedger(pg_db.app_url, migrate_url=pg_db.owner_url)
    try:
        for n, backend in enumerate((one, two)):  # each replica registers the scope before the race
            await backend.put(WS, _note(f"warm-up {n}"), idempotency_key=f"warm{n}")
        sim.latency = 0.2
        keys = [f"k{i}" for i in range(4)]
        results = await asyncio.gather(*(b.put(WS, _note(f"decision {k}"), idempotency_key=k) for k in keys for b in (one, two)))
        by_key: dict[str, set[str]] = {}
        for (k, _b), r in zip(((k, b) for k in keys for b in (one, two)), results):
            by_key.setdefault(k, set()).add(r.id)
        assert all(len(ids) == 1 for ids in by_key.values()), f"one idempotency key became two memories: {by_key}"
        groups = {next(iter(ids)) for ids in by_key.values()}
        copies = Counter(e.group_id for e in sim.all_events() if e.group_id in groups)
        assert copies == Counter({g: 1 for g in groups}), f"a write sent to two replicas landed twice: {copies}"
        assert one.ledger.secret("cursor-key") == two.ledger.secret("cursor-key")  # a cursor from one replica opens on the other
    finally:
        await one.aclose()
        await two.aclose()


async def test_two_replicas_minting_one_principals_key_at_once_mint_it_once(pg_db: TestDatabase) -> None:
    """Two replicas race to provision the same OpenViking principal: the second waits for the
    first and finds its key (a second mint would regenerate the key and revoke the first's)."""
    secret = Fernet.generate_key()
    one = PgKeyStore(pg_db.app_url, migrate_url=pg_db.owner_url, encryption_key=secret)
    two = PgKeyStore(pg_db.app_url, encryption_key=secret)
    minted: list[str] = []

    async def provision(store: PgKeyStore, name: str) -> SecretKey:
        async with store.hold("acme", "alice"):
            key = await store.get("acme", "alice")
            if key is not None:
                return key
            await asyncio.sleep(0.2)  # the server's create_user round trip
            minted.append(name)
            key = SecretKey(f"key-minted-by-{name}")
            await store.put("acme", "alice", key)
            return key

    try:
        a, b = await asyncio.gather(provision(one, "one"), provision(two, "two"))
        assert len(minted) == 1 and a == b, f"two keys minted for one principal: {minted}"
        async with one.hold("acme", "bob"):  # another principal is not held up by alice's lock
            async with two.hold("acme", "bob-other"):
                pass
    finally:
        one.close()
        two.close()


def test_viking_and_openviking_from_settings_keep_their_state_beside_the_shared_state(pg_db: TestDatabase, tmp_path) -> None:
    """With VIKING_BRIDGE_STATE_URL the registry opens Viking with the PostgreSQL ledger and
    OpenViking (api_key mode) with the PostgreSQL key store: nothing of either on local disk."""
    from bridge.assembly.backends import OpenRequest, backend_entry
    from bridge.assembly.settings import load_bridge_settings

    shared = {"home": tmp_path / "home", "state_url": pg_db.app_url, "state_migrate_url": pg_db.owner_url}
    viking = load_bridge_settings(backend="viking", viking={"url": "http://127.0.0.1:9", "collection": "c", "api_key": "k" * 12}, **shared)
    backend = backend_entry("viking").open(OpenRequest(viking, state=None))  # type: ignore[arg-type]
    try:
        assert isinstance(backend.ledger, PgWriteLedger)
    finally:
        asyncio.run(backend.aclose())
    ov = load_bridge_settings(backend="openviking", openviking={"url": "http://127.0.0.1:9", "root_api_key": "r" * 12, "mode": "api_key",
                                                               "key_store_secret": Fernet.generate_key().decode()}, **shared)
    backend = backend_entry("openviking").open(OpenRequest(ov, state=None))  # type: ignore[arg-type]
    try:
        assert isinstance(backend._keys, PgKeyStore)
    finally:
        asyncio.run(backend.aclose())
    assert not (tmp_path / "home" / "viking").exists() and not (tmp_path / "home" / "openviking-keys.json").exists()
