"""The OpenViking key store on PostgreSQL: shared by replicas, ciphertext only, bound to its principal."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from adapters.errors import BackendMisconfigured
from adapters.openviking.client import SecretKey
from adapters.openviking.keystore_postgres import PgKeyStore
from contract_tests.postgres_server import TestDatabase
from tests.postgres.pgkit import connect


async def test_key_put_on_one_replica_is_found_on_another_and_stored_only_encrypted(pg_db: TestDatabase) -> None:
    secret = Fernet.generate_key()
    one = PgKeyStore(pg_db.app_url, migrate_url=pg_db.owner_url, encryption_key=secret)
    two = PgKeyStore(pg_db.app_url, encryption_key=secret)
    try:
        await one.put("acme", "alice", SecretKey("ov-user-key-alice"))
        assert await two.get("acme", "alice") == SecretKey("ov-user-key-alice")
        assert await two.get("acme", "bob") is None
        with connect(pg_db.owner_url) as conn:
            (stored,) = conn.execute("SELECT ciphertext FROM openviking_keys").fetchone()
        assert "ov-user-key-alice" not in stored and "ov-user-key-alice" not in repr(one)
        await two.remove_account("acme")
        assert await one.get("acme", "alice") is None
    finally:
        one.close()
        two.close()


async def test_key_row_moved_to_another_principal_or_wrong_secret_is_refused(pg_db: TestDatabase) -> None:
    store = PgKeyStore(pg_db.app_url, migrate_url=pg_db.owner_url, encryption_key=Fernet.generate_key())
    try:
        await store.put("acme", "alice", SecretKey("ov-user-key-alice"))
        with connect(pg_db.owner_url) as conn:  # an attacker with table access copies alice's row to mallory
            conn.execute("""INSERT INTO openviking_keys SELECT account, 'mallory', ciphertext FROM openviking_keys WHERE "user" = 'alice'""")
        with pytest.raises(BackendMisconfigured, match="another principal"):
            await store.get("acme", "mallory")
        other = PgKeyStore(pg_db.app_url, encryption_key=Fernet.generate_key())
        with pytest.raises(BackendMisconfigured, match="cannot be decrypted"):
            await other.get("acme", "alice")
        other.close()
    finally:
        store.close()
    with pytest.raises(BackendMisconfigured):
        PgKeyStore(pg_db.app_url, encryption_key="")
