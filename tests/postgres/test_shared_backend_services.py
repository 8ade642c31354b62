"""Two `viking-bridge serve` replicas in front of ONE Viking collection (the simulator over real
HTTP), sharing one PostgreSQL state, configured by environment alone: the same write sent to both
replicas at once, several times over, is one memory with one physical copy at the service, and
the write ledger both replicas used is the one in PostgreSQL (no ledger file on either machine)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from adapters.scopes import ScopeKey
from adapters.viking import ApiKeyAuth, VikingBackend, VikingConfig, VikingMemoryClient
from adapters.viking.rows import SERVICE_MAX_LIMIT
from contract_tests.postgres_server import TestDatabase
from contract_tests.reaper import popen_reaped
from identity.providers import ApiKeyStore
from identity.state.postgres import PgApiKeyRepository
from identity.storage.postgres import PgPool
from tests.postgres.pgkit import connect
from tests.service.servicekit import wait_until_ready
from tests.service.test_backends_by_environment import viking_sim  # noqa: F401 - the simulator fixture

ROOT = Path(__file__).resolve().parents[2]


def _spawn(env: dict[str, str], tmp: Path, n: int) -> tuple[str, subprocess.Popen]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, **env, "PYTHONPATH": str(ROOT),
            "VIKING_BRIDGE_HOME": str(tmp / f"home{n}"), "VIKING_BRIDGE_SERVICE_RATE_BURST": "100000"}
    err = open(tmp / f"replica{n}.err", "wb")  # noqa: SIM115 - the child writes to it for its life
    process = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                           cwd=ROOT, env=full, stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, process, tmp / f"replica{n}.err", 60)
    except BaseException:
        process.kill()
        raise
    return url, process


@pytest.fixture
def viking_replicas(viking_sim, pg_db: TestDatabase, tmp_path: Path) -> Iterator[tuple[list[str], dict[str, str], ApiKeyStore]]:  # noqa: F811
    line, _ = viking_sim
    env = {"VIKING_BRIDGE_BACKEND": "viking", "VIKING_BRIDGE_VIKING__URL": line["url"], "VIKING_BRIDGE_VIKING__COLLECTION": line["collection"],
           "VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION": line["global_collection"], "VIKING_BRIDGE_VIKING__API_KEY": line["api_key"],
           "VIKING_BRIDGE_EMBEDDER": "hashing", "VIKING_BRIDGE_STATE_URL": pg_db.app_url, "VIKING_BRIDGE_STATE_MIGRATE_URL": pg_db.owner_url,
           "VIKING_BRIDGE_SERVICE_PROVIDERS": "api_key"}
    started: list[tuple[str, subprocess.Popen]] = []
    keys = None
    try:
        for n in (1, 2):
            started.append(_spawn(env, tmp_path, n))
        keys = ApiKeyStore(PgApiKeyRepository(PgPool(pg_db.app_url, max_size=1), owns_pool=True))
        yield [u for u, _ in started], line, keys
    finally:
        if keys is not None:
            keys.close()
        for _, p in started:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


async def _copies(line: dict[str, str], scope: ScopeKey, memory_id: str) -> int:
    client = VikingMemoryClient(line["url"], ApiKeyAuth(line["api_key"]))
    backend = VikingBackend(client, VikingConfig(shared_collection=line["collection"], global_collection=line["global_collection"]))
    try:
        rows = await client.search(backend.collection_for(scope), filter={"user_id": [backend.principal(scope)], "group_id": [memory_id],
                                   "memory_type": backend.config.search_types}, query=None, limit=SERVICE_MAX_LIMIT, kind="event")
        return sum(1 for r in rows if r.get("group_id") == memory_id)
    finally:
        await backend.aclose()


def test_one_write_sent_to_two_viking_replicas_at_once_is_one_copy(viking_replicas, pg_db: TestDatabase, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    urls, line, keys = viking_replicas
    key = keys.issue(tenant_id="acme", user_id="alice", agent_id="assistant", label="replicas").key
    ids: dict[str, set[str]] = {}

    def send(url: str, n: int) -> tuple[str, str]:
        body = {"content": f"decision {n}: ship on thursday", "kind": "decision", "idempotency_key": f"decision-{n}"}
        r = httpx.post(url + "/api/v1/memories", json=body, headers={"X-API-Key": key}, timeout=30.0)
        assert r.status_code in (200, 201), r.text
        return f"decision-{n}", r.json()["memory_id"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        for k, memory_id in pool.map(lambda a: send(*a), [(u, n) for n in range(6) for u in urls for _ in range(2)]):
            ids.setdefault(k, set()).add(memory_id)
    assert all(len(v) == 1 for v in ids.values()), f"one idempotency key became two memories: {ids}"
    scope = ScopeKey.private("acme", "alice")
    copies = {k: asyncio.run(_copies(line, scope, next(iter(v)))) for k, v in ids.items()}
    assert copies == {k: 1 for k in ids}, f"a write sent to both replicas landed more than once: {copies}"
    with connect(pg_db.admin_url) as conn:  # both replicas kept their ledger rows in the shared state
        (rows,) = conn.execute("SELECT COUNT(*) FROM viking_bridge.viking_writes WHERE group_id = ANY(%s)",
                               ([next(iter(v)) for v in ids.values()],)).fetchone()
    assert rows == len(ids)
    assert not any((tmp_path / f"home{n}" / "viking").exists() for n in (1, 2)), "a replica kept a ledger file of its own"
