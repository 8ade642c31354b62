"""Two `viking-bridge serve` replicas (configured by environment alone, VIKING_BRIDGE_BACKEND=
openviking in api_key mode) in front of ONE real OpenViking server, sharing their state on
PostgreSQL (VIKING_BRIDGE_STATE_URL: API keys, audit, and the OpenViking user keys, encrypted).

The race this is about: in api_key mode the bridge mints one OpenViking user (and key) per scope
principal on its first write. Two replicas taking the first writes of the same principals at the
same moment must not both mint: the second mint would regenerate the key and leave the first
replica holding a dead one. So every principal's first write goes through both replicas at once,
and the OpenViking admin calls are counted on the wire (a counting proxy in front of the server):
each principal's key is minted exactly once (a successful user creation or key regeneration),
its key is stored once, and each acknowledged write is exactly one memory, readable through the
other replica."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from cryptography.fernet import Fernet

from contract_tests.postgres_server import TestDatabase
from contract_tests.reaper import popen_reaped
from identity.providers import ApiKeyStore
from identity.state.postgres import PgApiKeyRepository
from identity.storage.postgres import PgPool
from tests.postgres.pgkit import connect
from tests.service.servicekit import free_port, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
USERS = [f"racer{i}" for i in range(6)]
_USER_CALL = re.compile(r"^/api/v1/admin/accounts/(?P<account>[^/]+)/users(?:/(?P<user>[^/]+)/key)?$")


class CountingProxy:
    """A reverse proxy in front of the OpenViking server that records every successful key mint:
    POST .../accounts/A/users (a new user and its key) and POST .../users/U/key (a regenerated key)."""

    def __init__(self, upstream: str) -> None:
        self.mints: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        proxy = self
        client = httpx.Client(base_url=upstream, timeout=120.0, trust_env=False)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                answer = client.request(self.command, self.path, content=body, headers=headers)
                found = _USER_CALL.match(self.path.split("?", 1)[0])
                if self.command == "POST" and found and answer.is_success:
                    user = found.group("user") or httpx.Response(200, content=body).json().get("user_id")
                    with proxy._lock:
                        proxy.mints[(found.group("account"), user)] += 1
                self.send_response(answer.status_code)
                for k, v in answer.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

            def log_message(self, *args: object) -> None:  # keys travel in headers: log nothing
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self._client = client

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()


@dataclass
class Replica:
    url: str
    process: subprocess.Popen
    err: Path


def _openviking() -> tuple[str, str]:
    from contract_tests.backends.openviking import _unavailable, shared_server

    reason = _unavailable("api_key")
    if reason is not None:
        pytest.skip(f"OpenViking (api_key) unavailable: {reason}")
    return shared_server("api_key")


def _spawn(n: int, env: dict[str, str], tmp: Path) -> Replica:
    port = free_port()
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "PYTHONPATH": str(ROOT),
            "VIKING_BRIDGE_HOME": str(tmp / f"home{n}"), **env}
    err = tmp / f"replica{n}.err"
    with open(err, "wb") as out:
        process = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                               cwd=ROOT, env=full, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    return Replica(f"http://127.0.0.1:{port}", process, err)


def _stop(replica: Replica) -> None:
    if replica.process.poll() is None:
        replica.process.send_signal(signal.SIGTERM)
        try:
            replica.process.wait(20)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait(10)


@pytest.fixture
def replicas(pg_db: TestDatabase, tmp_path: Path) -> Iterator[tuple[Replica, Replica, ApiKeyStore, CountingProxy, str]]:
    url, root_key = _openviking()
    proxy = CountingProxy(url)
    namespace = "rp" + secrets.token_hex(4)  # a throw-away namespace on the shared server
    root_file = tmp_path / "ov-root-key"
    root_file.write_text(root_key + "\n")
    env = {"VIKING_BRIDGE_BACKEND": "openviking", "VIKING_BRIDGE_OPENVIKING__URL": proxy.url,
           "VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY_FILE": str(root_file), "VIKING_BRIDGE_OPENVIKING__MODE": "api_key",
           "VIKING_BRIDGE_OPENVIKING__KEY_STORE_SECRET": Fernet.generate_key().decode(), "VIKING_BRIDGE_OPENVIKING__NAMESPACE": namespace,
           "VIKING_BRIDGE_STATE_URL": pg_db.app_url, "VIKING_BRIDGE_STATE_MIGRATE_URL": pg_db.owner_url,
           "VIKING_BRIDGE_EMBEDDER": "hashing", "VIKING_BRIDGE_SERVICE_PROVIDERS": "api_key", "VIKING_BRIDGE_SERVICE_RATE_BURST": "100000"}
    one = _spawn(1, env, tmp_path)
    wait_until_ready(one.url, one.process, one.err, 120)  # the first one migrates the shared state alone
    two = _spawn(2, env, tmp_path)
    keys = ApiKeyStore(PgApiKeyRepository(PgPool(pg_db.app_url, max_size=1), owns_pool=True))
    try:
        wait_until_ready(two.url, two.process, two.err, 120)
        yield one, two, keys, proxy, namespace
    finally:
        keys.close()
        for r in (one, two):
            _stop(r)
        proxy.close()
        asyncio.run(_drop_namespace(url, root_key, namespace))


async def _drop_namespace(url: str, root_key: str, namespace: str) -> None:
    from adapters.openviking import OpenVikingBackend

    with tempfile.TemporaryDirectory(prefix="vb-ov-replicas-") as tmp:
        backend = OpenVikingBackend.connect(url, root_key, mode="api_key", key_store_path=str(Path(tmp) / "keys.json"), namespace=namespace)
        try:
            await backend.drop_namespace()
        finally:
            await backend.aclose()


def test_concurrent_first_writes_through_two_replicas_mint_one_key_per_principal_and_one_memory_per_write(replicas, pg_db: TestDatabase) -> None:  # type: ignore[no-untyped-def]
    one, two, keys, proxy, namespace = replicas
    api_keys = {u: keys.issue(tenant_id="acme", user_id=u, agent_id="assistant", label="replicas").key for u in USERS}  # type: ignore[arg-type]
    start = threading.Barrier(2 * len(USERS))
    acknowledged: dict[tuple[str, str], dict] = {}
    failures: list[str] = []

    def first_write(replica: Replica, user: str) -> None:
        content = f"{user} through {replica.url.rsplit(':', 1)[1]}: the racing write {secrets.token_hex(3)}"
        with httpx.Client(base_url=replica.url, headers={"X-API-Key": api_keys[user]}, timeout=120.0) as c:
            start.wait(60)
            answer = c.post("/api/v1/memories", json={"content": content, "kind": "fact"})
        if answer.status_code == 201:
            acknowledged[(user, content)] = answer.json()
        else:
            failures.append(f"{user} via {replica.url}: {answer.status_code} {answer.text[:300]}")

    threads = [threading.Thread(target=first_write, args=(r, u)) for u in USERS for r in (one, two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not failures, failures  # a refused write here would hide a lost race as a retryable error
    assert len(acknowledged) == 2 * len(USERS)

    # one mint per principal, on the wire: a second one would have regenerated the first replica's key
    assert proxy.mints, "no user was minted (the proxy saw nothing: the count below would pass vacuously)"
    assert all(account.startswith(namespace) for account, _ in proxy.mints), proxy.mints
    twice = {p: n for p, n in proxy.mints.items() if n != 1}
    assert not twice, f"principals minted more than once: {twice}"
    with connect(pg_db.admin_url) as conn:
        stored = conn.execute('SELECT account, "user" FROM viking_bridge.openviking_keys').fetchall()
    assert sorted(stored) == sorted(proxy.mints), (stored, proxy.mints)  # each minted key kept, once

    # each acknowledged write is one memory, read back through the OTHER replica (its stored key works)
    for (user, content), written in acknowledged.items():
        other = two if one.url.rsplit(":", 1)[1] in content else one
        with httpx.Client(base_url=other.url, headers={"X-API-Key": api_keys[user]}, timeout=120.0) as c:
            got = c.get(f"/api/v1/memories/{written['memory_id']}", params={"scope": written["scope"]})
            assert got.status_code == 200 and got.json()["content"] == content, got.text
            listed = c.get("/api/v1/memories", params={"scope": written["scope"], "limit": 100})
            assert listed.status_code == 200, listed.text
            contents = [m["content"] for m in listed.json()["memories"]]
            assert contents.count(content) == 1, contents
    assert sum(proxy.mints.values()) == len(proxy.mints)  # reading through the other replica minted nothing more
