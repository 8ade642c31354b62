"""The service's periodic purge (bridge/doors/http/maintenance.py): it authenticates each configured
maintenance key like a request, purges that key's tenant until clean, refuses a non-admin key
(logged, nothing deleted), and never deletes a memory that has not expired."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from adapters.scopes import ScopeKey
from bridge.facade import MemoryBridge
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.maintenance import purge_once
from bridge.doors.http.settings import load_service_settings
from contract_tests.harness import Clock
from identity.providers import ApiKeyProvider, ApiKeyStore
from tests.kit import make_identity


@pytest.fixture
async def world(tmp_path: Path):
    clock = Clock()
    bridge = MemoryBridge.open_local(tmp_path / "home", clock=clock)
    store = ApiKeyStore(tmp_path / "keys.sqlite3")
    auth = EdgeAuthenticator({"api_key": ApiKeyProvider(store)})
    yield bridge, clock, store, auth
    store.close()
    await bridge.aclose()


async def test_the_periodic_purge_cleans_each_keys_tenant_in_bounded_runs(world) -> None:
    bridge, clock, store, auth = world
    writer = make_identity("alice")
    doomed = [await bridge.remember(writer, f"short-lived note {n}", "note", ttl_s=10) for n in range(3)]
    kept = await bridge.remember(writer, "lasting note", "note", ttl_s=3600)
    other = await bridge.remember(make_identity("gina", tenant="globex"), "globex note", "note", ttl_s=10)
    clock.now += 11
    acme_admin = store.issue(tenant_id="acme", user_id="ops", agent_id="maintenance", roles=["admin"], label="purge").key
    assert await purge_once(bridge, auth, [acme_admin], batch=2) == {"acme": 3}
    rows = await bridge.audit_events(make_identity("root", roles=["admin"]), action="expired", limit=10)
    assert sorted(m for r in rows for m in r.memory_ids) == sorted(d.memory_id for d in doomed)
    assert all(r.actor.startswith("acme/ops@maintenance") for r in rows)
    assert {m.id for m in await bridge.backend.list(ScopeKey.private("acme", "alice"))} == {kept.memory_id}
    assert {m.id for m in await bridge.backend.list(ScopeKey.private("globex", "gina"))} == {other.memory_id}, "another tenant is purged only with its own key"


async def test_a_non_admin_maintenance_key_is_refused_and_logged(world, caplog) -> None:
    bridge, clock, store, auth = world
    await bridge.remember(make_identity("alice"), "short-lived", "note", ttl_s=1)
    clock.now += 2
    member = store.issue(tenant_id="acme", user_id="alice", agent_id="assistant", label="not an admin").key
    with caplog.at_level(logging.ERROR, logger="viking_bridge.maintenance"):
        assert await purge_once(bridge, auth, [member, "vbk_not_a_key"]) == {}
    assert "key #1 failed: NotPermitted" in caplog.text and "key #2 failed: InvalidCredential" in caplog.text, caplog.text
    assert len(await bridge.backend.list(ScopeKey.private("acme", "alice"))) == 1, "a refused purge deleted something"


def test_purge_settings_are_read_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_SERVICE_PURGE_INTERVAL_SECONDS", "600")
    monkeypatch.setenv("VIKING_BRIDGE_SERVICE_PURGE_API_KEYS", "k1, k2")
    settings = load_service_settings()
    assert settings.purge_interval_seconds == 600 and [k.get_secret_value() for k in settings.purge_api_keys] == ["k1", "k2"]
    assert "k1" not in repr(settings)
