"""One `viking-bridge serve` process sharding tenants over two PostgreSQL SERVERS by a routing
table, configured by environment alone, and an outage of one of them.

Layout (docs/deploying.md, "Several backends, one service"): server 1 holds the bridge state
(VIKING_BRIDGE_STATE_URL: grants, audit, sessions, API keys) and shard `s1` (acme, the global
scope) in the same database; server 2 (a second, independent pgserver instance:
`contract_tests.postgres_server.second_server`) holds only shard `s2` (globex).

Checked from each server directly (its admin connection, not the bridge): each tenant's rows are
on its own server only; each recall sees only its tenant; and while server 2 is down, globex's
calls are a 503 problem naming no other shard's data and leaving nothing on server 1, while acme
keeps writing and recalling; once server 2 is back, globex is served again with its memories."""

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

from contract_tests.postgres_server import PostgresForTests, TestDatabase, second_server, second_unavailable_reason
from contract_tests.reaper import popen_reaped
from identity.providers import ApiKeyStore
from identity.state.postgres import PgApiKeyRepository
from identity.storage.postgres import PgPool
from tests.postgres.pgkit import connect
from tests.service.servicekit import assert_problem, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pg_server_two() -> PostgresForTests:
    reason = second_unavailable_reason()
    if reason:
        pytest.skip(f"no second PostgreSQL server for this test: {reason}")
    return second_server()


@pytest.fixture
def shard_two(pg_server_two: PostgresForTests) -> Iterator[TestDatabase]:
    db = pg_server_two.create_database()
    try:
        yield db
    finally:
        pg_server_two.bring_back()  # a test that failed mid-outage leaves the server usable
        pg_server_two.drop_database(db)


@pytest.fixture
def service(pg_db: TestDatabase, shard_two: TestDatabase, tmp_path: Path) -> Iterator[tuple[str, ApiKeyStore]]:
    routes = tmp_path / "routes.toml"
    url_file = tmp_path / "s2-url"  # the second server's credentials as a mounted secret file
    url_file.write_text(shard_two.app_url + "\n")
    routes.write_text(
        'global = "s1"\n[tenants]\nacme = "s1"\nglobex = "s2"\n'
        '[backends.s1]\nbackend = "postgres"\n'  # memories beside the bridge state (STATE_URL), on server 1
        f'[backends.s2]\nbackend = "postgres"\nmemory_url_file = "{url_file}"\nmemory_migrate_url = "{shard_two.owner_url}"\n'
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "PYTHONPATH": str(ROOT),
           "VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_SERVICE_RATE_BURST": "100000",
           "VIKING_BRIDGE_STATE_URL": pg_db.app_url, "VIKING_BRIDGE_STATE_MIGRATE_URL": pg_db.owner_url,
           "VIKING_BRIDGE_BACKEND": "routed", "VIKING_BRIDGE_ROUTES_FILE": str(routes), "VIKING_BRIDGE_SERVICE_PROVIDERS": "api_key",
           "VIKING_BRIDGE_SERVICE_REQUEST_TIMEOUT_SECONDS": "20"}
    err = open(tmp_path / "serve.err", "wb")  # noqa: SIM115 - the child writes to it for its life
    process = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                           cwd=ROOT, env=env, stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    keys = None
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, process, tmp_path / "serve.err", 90)
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


def _contents_by_tenant(db: TestDatabase) -> dict[str | None, set[str]]:
    """What the server itself holds (its admin connection, past RLS): tenant -> contents."""
    found: dict[str | None, set[str]] = {}
    with connect(db.admin_url) as conn:
        for tenant, content in conn.execute("SELECT tenant_id, content FROM viking_bridge.memories").fetchall():
            found.setdefault(tenant, set()).add(content)
    return found


def test_tenants_sharded_over_two_servers_stay_apart_and_an_outage_of_one_fails_only_its_tenant(
        service, pg_db: TestDatabase, shard_two: TestDatabase, pg_server_two: PostgresForTests) -> None:  # type: ignore[no-untyped-def]
    url, keys = service

    def client(tenant: str, user: str) -> httpx.Client:
        key = keys.issue(tenant_id=tenant, user_id=user, agent_id="assistant", label="shards", roles=["admin"]).key  # type: ignore[arg-type]
        return httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60.0)

    def write(c: httpx.Client, text: str) -> httpx.Response:
        return c.post("/api/v1/memories", json={"content": text, "kind": "fact", "visibility": "tenant"})

    def recall(c: httpx.Client) -> httpx.Response:
        return c.get("/api/v1/recall", params={"query": "harbour launch plan", "min_score": 0.0})

    with client("acme", "alice") as alice, client("globex", "bob") as bob:
        assert write(alice, "acme harbour launch plan: the north pier").status_code == 201
        assert write(bob, "globex harbour launch plan: the south pier").status_code == 201
        seen_a, seen_b = recall(alice), recall(bob)
        assert seen_a.status_code == 200 and seen_b.status_code == 200, (seen_a.text, seen_b.text)
        assert "north pier" in seen_a.text and "south pier" not in seen_a.text
        assert "south pier" in seen_b.text and "north pier" not in seen_b.text
        # each server, asked directly, holds its own tenant's rows and no other
        assert _contents_by_tenant(pg_db) == {"acme": {"acme harbour launch plan: the north pier"}}
        assert _contents_by_tenant(shard_two) == {"globex": {"globex harbour launch plan: the south pier"}}
        assert alice.get("/api/v1/admin/whoami").json()["memory_backend"] == "s1 (postgres)"
        assert bob.get("/api/v1/admin/whoami").json()["memory_backend"] == "s2 (postgres)"

        pg_server_two.take_down()
        try:
            for answer in (write(bob, "globex written during the outage"), recall(bob)):
                problem = assert_problem(answer, 503)
                assert "north pier" not in answer.text and "acme" not in answer.text, problem
                assert answer.headers.get("retry-after"), answer.headers
            # the other shard (and the state beside it) is untouched by the outage
            assert write(alice, "acme harbour launch plan: the east pier, during globex's outage").status_code == 201
            during = recall(alice)
            assert during.status_code == 200 and "east pier" in during.text and "south pier" not in during.text, during.text
            assert "globex" not in _contents_by_tenant(pg_db)  # nothing of globex's was written to server 1 instead
        finally:
            pg_server_two.bring_back()

        back = recall(bob)
        assert back.status_code == 200 and "south pier" in back.text and "north" not in back.text, back.text
        assert set(_contents_by_tenant(shard_two)) == {"globex"}
        assert "globex written during the outage" not in _contents_by_tenant(shard_two)["globex"]
