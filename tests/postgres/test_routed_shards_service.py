"""One `viking-bridge serve` process in front of two PostgreSQL memory shards, routed by tenant
(VIKING_BRIDGE_BACKEND=routed + VIKING_BRIDGE_ROUTES_FILE), configured by environment alone.

Shard `pg1` is the database holding the bridge state too (acme and the global scope live there),
shard `pg2` another database (globex). Two databases of the test server stand for two servers:
each is reached by its own URL and roles, as a second server would be. Checked: each tenant's
rows are in its shard's table and nowhere else, no tenant recalls another's, a tenant missing
from the table is refused (403, naming the table), and whoami names the caller's backend."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from contract_tests.postgres_server import PostgresForTests, TestDatabase
from contract_tests.reaper import popen_reaped
from identity.providers import ApiKeyStore
from identity.state.postgres import PgApiKeyRepository
from identity.storage.postgres import PgPool
from tests.postgres.pgkit import connect
from tests.service.servicekit import assert_problem, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def second_db(pg_server: PostgresForTests) -> Iterator[TestDatabase]:
    db = pg_server.create_database()
    try:
        yield db
    finally:
        pg_server.drop_database(db)


@pytest.fixture
def routed_service(pg_db: TestDatabase, second_db: TestDatabase, tmp_path: Path) -> Iterator[tuple[str, ApiKeyStore]]:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        'global = "pg1"\n[tenants]\nacme = "pg1"\nglobex = "pg2"\n'
        '[backends.pg1]\nbackend = "postgres"\n'  # memories beside the bridge state (STATE_URL)
        f'[backends.pg2]\nbackend = "postgres"\nmemory_url = "{second_db.app_url}"\nmemory_migrate_url = "{second_db.owner_url}"\n'
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "PYTHONPATH": str(ROOT),
           "VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_SERVICE_RATE_BURST": "100000",
           "VIKING_BRIDGE_STATE_URL": pg_db.app_url, "VIKING_BRIDGE_STATE_MIGRATE_URL": pg_db.owner_url,
           "VIKING_BRIDGE_BACKEND": "routed", "VIKING_BRIDGE_ROUTES_FILE": str(routes), "VIKING_BRIDGE_SERVICE_PROVIDERS": "api_key"}
    err = open(tmp_path / "serve.err", "wb")  # noqa: SIM115 - the child writes to it for its life
    process = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                           cwd=ROOT, env=env, stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    keys = None
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, process, tmp_path / "serve.err", 60)
        keys = ApiKeyStore(PgApiKeyRepository(PgPool(pg_db.app_url, max_size=1), owns_pool=True))
        yield url, keys
    finally:
        if keys is not None:
            keys.close()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _tenants_in(db: TestDatabase) -> set[str | None]:
    with connect(db.admin_url) as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT tenant_id FROM viking_bridge.memories").fetchall()}


def test_each_tenant_lives_on_its_own_shard_and_an_unrouted_tenant_is_refused(routed_service, pg_db: TestDatabase, second_db: TestDatabase) -> None:  # type: ignore[no-untyped-def]
    url, keys = routed_service

    def client(tenant: str, user: str) -> httpx.Client:
        key = keys.issue(tenant_id=tenant, user_id=user, agent_id="assistant", label="routed", roles=["admin"]).key  # type: ignore[arg-type]
        return httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=30.0)

    with client("acme", "alice") as alice, client("globex", "bob") as bob, client("initech", "carol") as carol:
        for c, text in ((alice, "acme roadmap: ship the bridge in May"), (bob, "globex roadmap: ship the bridge in June")):
            r = c.post("/api/v1/memories", json={"content": text, "kind": "fact", "visibility": "tenant"})
            assert r.status_code == 201, r.text
        seen_a = alice.get("/api/v1/recall", params={"query": "roadmap ship the bridge", "min_score": 0.0})
        seen_b = bob.get("/api/v1/recall", params={"query": "roadmap ship the bridge", "min_score": 0.0})
        assert seen_a.status_code == 200 and seen_b.status_code == 200, (seen_a.text, seen_b.text)
        assert "acme roadmap" in seen_a.text and "globex" not in seen_a.text
        assert "globex roadmap" in seen_b.text and "acme" not in seen_b.text
        assert _tenants_in(pg_db) == {"acme"} and _tenants_in(second_db) == {"globex"}

        refused = assert_problem(carol.post("/api/v1/memories", json={"content": "initech's plan", "kind": "fact"}), 403)
        assert "initech" in refused["detail"] and "routing table" in refused["detail"]
        assert_problem(carol.get("/api/v1/recall", params={"query": "plan"}), 403)
        assert None not in _tenants_in(pg_db) | _tenants_in(second_db) and "initech" not in _tenants_in(pg_db) | _tenants_in(second_db)

        assert alice.get("/api/v1/admin/whoami").json()["memory_backend"] == "pg1 (postgres)"
        assert bob.get("/api/v1/admin/whoami").json()["memory_backend"] == "pg2 (postgres)"
