"""`open_bridge()` selects PostgreSQL from the settings alone — what every `serve` replica runs —
and refuses a mix that could not be shared (replicas over one machine's local store)."""

from __future__ import annotations

import pytest

from bridge.errors import ConfigurationError
from bridge.facade import open_bridge
from bridge.assembly.settings import load_bridge_settings
from contract_tests.postgres_server import TestDatabase
from tests.kit import make_identity


def _env(monkeypatch: pytest.MonkeyPatch, db: TestDatabase, **extra: str) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_STATE_URL", db.app_url)
    monkeypatch.setenv("VIKING_BRIDGE_STATE_MIGRATE_URL", db.owner_url)
    for name, value in extra.items():
        monkeypatch.setenv(f"VIKING_BRIDGE_{name}", value)


async def test_two_replicas_opened_from_the_same_settings_share_memories_grants_and_audit(pg_db: TestDatabase, monkeypatch, tmp_path) -> None:
    _env(monkeypatch, pg_db, BACKEND="postgres", HOME=str(tmp_path))
    a, b = open_bridge(), open_bridge()
    try:
        alice, admin = make_identity(), make_identity("dave", roles=("admin",))
        written = await a.remember(alice, "replicas share the alpha decision log", "decision")
        seen = await b.recall(alice, "alpha decision log")
        assert written.memory_id in {i.memory_id for i in seen.items}, "a memory written through one replica is missing on the other"
        grant = await a.grant(admin, "bob", "acme/dept/eng", ttl_seconds=60, reason="review")
        assert [g.grant_id for g in await b.state.grants.for_grantee("acme", "bob")] == [grant.grant_id]
        seqs = [e.seq for e in await b.audit_events(admin, limit=10)]
        assert len(seqs) >= 3 and seqs == sorted(seqs, reverse=True), "one audit sequence across replicas"
        assert not (tmp_path / "bridge.sqlite3").exists(), "a replica fell back to local SQLite state"
    finally:
        await a.aclose()
        await b.aclose()


def test_shared_state_over_a_local_store_is_refused(pg_db: TestDatabase, monkeypatch) -> None:
    _env(monkeypatch, pg_db)  # BACKEND defaults to local
    with pytest.raises(ConfigurationError, match="VIKING_BRIDGE_BACKEND=postgres"):
        open_bridge()


def test_a_postgres_backend_without_a_state_url_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_BACKEND", "postgres")
    with pytest.raises(ConfigurationError, match="VIKING_BRIDGE_STATE_URL"):
        open_bridge()


def test_a_state_url_that_is_not_postgresql_is_named(monkeypatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_STATE_URL", "sqlite:///tmp/x")
    with pytest.raises(ConfigurationError, match="VIKING_BRIDGE_STATE_URL"):
        load_bridge_settings()


async def test_keys_issued_by_the_admin_command_under_shared_state_authenticate_on_every_replica(pg_db: TestDatabase, monkeypatch, tmp_path, capsys) -> None:
    from identity.admin import main as keys_main
    from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore

    _env(monkeypatch, pg_db, BACKEND="postgres", HOME=str(tmp_path))
    replica = open_bridge()  # migrates the shared schema, as a replica's start-up does
    try:
        monkeypatch.setenv("VIKING_BRIDGE_STATE_URL", pg_db.app_url)
        assert keys_main(["issue", "--tenant", "acme", "--user", "u9", "--agent", "a"]) == 0
        key = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("vbk_"))
        identity = await ApiKeyProvider(ApiKeyStore(replica.state.api_key_repository())).authenticate(ApiKey(key))
        assert (identity.tenant_id, identity.user_id) == ("acme", "u9")
        assert not list(tmp_path.glob("*.sqlite3")), "the key went to a local SQLite file instead of the shared state"
    finally:
        await replica.aclose()
