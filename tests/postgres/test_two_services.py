"""Two service replicas (two real HTTP server processes) on one PostgreSQL database, end to end
: a grant issued through one is honoured by the other; a gateway nonce used on
one is refused on the other; a session bound on one is enforced on the other; the audit log is
one sequence; SIGKILL one replica in the middle of writes and every acknowledged write is present
exactly once afterwards. Each replica is a real `viking-bridge serve` process configured only by
environment (VIKING_BRIDGE_STATE_URL, VIKING_BRIDGE_BACKEND=postgres), as an operator runs it."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from contract_tests.postgres_server import TestDatabase
from contract_tests.reaper import popen_reaped
from identity.providers import ApiKeyStore, sign_gateway_headers
from identity.state.postgres import PgApiKeyRepository
from identity.storage.postgres import PgPool
from tests.service.servicekit import wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
INTENT_GRACE_S = 2.0


@dataclass
class Replica:
    url: str
    process: subprocess.Popen

    def client(self, key: str | None = None, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={**({"X-API-Key": key} if key else {}), **headers}, timeout=30.0)


def _spawn(db: TestDatabase, secret: str, tmp: Path, n: int, ready_timeout: float = 60) -> Replica:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")},
           "VIKING_BRIDGE_HOME": str(tmp / f"home{n}"), "VIKING_BRIDGE_SERVICE_RATE_BURST": "100000", "PYTHONPATH": str(ROOT),
           # exactly what an operator sets for each replica: shared state and memories on PostgreSQL
           "VIKING_BRIDGE_STATE_URL": db.app_url, "VIKING_BRIDGE_STATE_MIGRATE_URL": db.owner_url, "VIKING_BRIDGE_BACKEND": "postgres",
           "VIKING_BRIDGE_SERVICE_PROVIDERS": "api_key,gateway", "VIKING_BRIDGE_GATEWAY__SECRET": secret,
           # a write intent younger than this may belong to a live replica's in-flight write, so
           # reconciliation leaves it alone; short here so the SIGKILL test need not wait 30 s
           "VIKING_BRIDGE_STATE_INTENT_GRACE_S": str(INTENT_GRACE_S)}
    err = open(tmp / f"replica{n}.err", "wb")  # noqa: SIM115 - the child writes to it for its life
    process = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                           cwd=ROOT, env=env, stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    replica = Replica(f"http://127.0.0.1:{port}", process)
    wait_until_ready(replica.url, process, tmp / f"replica{n}.err", ready_timeout)
    return replica


@pytest.fixture
def replicas(pg_db: TestDatabase, tmp_path: Path) -> Iterator[tuple[Replica, Replica, ApiKeyStore, str]]:
    secret = secrets.token_hex(32)
    one = _spawn(pg_db, secret, tmp_path, 1)
    two = _spawn(pg_db, secret, tmp_path, 2)
    keys = ApiKeyStore(PgApiKeyRepository(PgPool(pg_db.app_url, max_size=1), owns_pool=True))  # the deployment's admin tool
    try:
        yield one, two, keys, secret
    finally:
        keys.close()
        for r in (one, two):
            if r.process.poll() is None:
                r.process.send_signal(signal.SIGTERM)
                try:
                    r.process.wait(20)
                except subprocess.TimeoutExpired:
                    r.process.kill()
                    r.process.wait(10)


def _key(keys: ApiKeyStore, user: str, **fields: object) -> str:
    return keys.issue(tenant_id="acme", user_id=user, agent_id="assistant", label="two-services", **fields).key  # type: ignore[arg-type]


def test_two_replicas_share_grants_nonces_sessions_and_one_audit_sequence(replicas) -> None:  # type: ignore[no-untyped-def]
    one, two, keys, secret = replicas
    admin = _key(keys, "root", roles=["admin"])
    erin = _key(keys, "erin", department_ids=["eng"], roles=["approver"])
    carol = _key(keys, "carol", department_ids=["sales"])
    text = "Engineering standard: incident reviews are blameless"
    with one.client(erin) as c:
        assert c.post("/api/v1/memories", json={"content": text, "kind": "standard"}).status_code == 201
    with two.client(carol) as c:  # no grant yet: refused
        assert c.get("/api/v1/recall", params={"query": text, "include_scopes": ["acme/dept/eng"]}).status_code == 403
    with one.client(admin) as c:  # the grant is issued on replica one ...
        grant = c.post("/api/v1/grants", json={"grantee_user_id": "carol", "scope": "acme/dept/eng", "ttl_seconds": 600, "reason": "audit"})
        assert grant.status_code == 201, grant.text
    with two.client(carol) as c:  # ... and honoured on replica two
        seen = c.get("/api/v1/recall", params={"query": text, "include_scopes": ["acme/dept/eng"]})
        assert seen.status_code == 200 and text in seen.text, seen.text
    with two.client(admin) as c:
        assert c.delete(f"/api/v1/grants/{grant.json()['grant_id']}").status_code == 200
    with one.client(carol) as c:  # revoked on two: refused on one at its next request
        assert c.get("/api/v1/recall", params={"query": text, "include_scopes": ["acme/dept/eng"]}).status_code == 403

    headers = sign_gateway_headers(secret.encode(), method="GET", path="/api/v1/recall?query=x", tenant_id="acme", user_id="gina", agent_id="a",
                                   nonce="two-replica-nonce-1", session_id="gina-session-1", body=b"")
    assert httpx.get(one.url + "/api/v1/recall?query=x", headers=headers).status_code == 200
    replay = httpx.get(two.url + "/api/v1/recall?query=x", headers=headers)
    assert replay.status_code == 401 and "replay" in replay.text, replay.text

    with one.client(erin) as c:
        session = c.post("/api/v1/sessions").json()["session_id"]
    with two.client(carol, **{"X-Session-Id": session}) as c:  # erin's session, carol's key, the other replica
        assert c.get("/api/v1/recall", params={"query": "anything"}).status_code == 403
    with two.client(erin, **{"X-Session-Id": session}) as c:
        assert c.get("/api/v1/recall", params={"query": "anything"}).status_code == 200

    with one.client(admin) as a, two.client(admin) as b:
        rows_one, rows_two = a.get("/api/v1/audit", params={"limit": 200}).json(), b.get("/api/v1/audit", params={"limit": 200}).json()
    assert rows_one == rows_two and len(rows_one) >= 8
    seqs = [r["seq"] for r in rows_one]
    assert seqs == sorted(set(seqs), reverse=True)


def test_sigkilled_replica_loses_no_acknowledged_write_and_duplicates_none(replicas, pg_db: TestDatabase, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one, two, keys, secret = replicas
    alice = _key(keys, "alice")
    acked: list[tuple[str, str]] = []
    stop = threading.Event()

    def writer() -> None:
        with one.client(alice) as c:
            n = 0
            while not stop.is_set() and n < 2000:  # bounded; killed long before
                try:
                    r = c.post("/api/v1/memories", json={"content": f"note number {n}", "kind": "note", "idempotency_key": f"w-{n}"})
                except httpx.HTTPError:
                    return  # the replica died mid-request: that write was never acknowledged
                if r.status_code == 201:
                    acked.append((f"w-{n}", r.json()["memory_id"]))
                n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    deadline = time.monotonic() + 60
    while len(acked) < 25 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(one.process.pid, signal.SIGKILL)  # mid-stream
    killed_at = time.monotonic()
    stop.set()
    thread.join(30)
    one.process.wait(10)
    assert len(acked) >= 25
    with two.client(alice) as c:  # the survivor serves the same data
        stored, cursor = [], None
        while True:  # walk every page
            page = c.get("/api/v1/memories", params={"scope": "acme/user/alice", "limit": 500, **({"cursor": cursor} if cursor else {})})
            assert page.status_code == 200, page.text
            stored += page.json()["memories"]
            cursor = page.json()["next_cursor"]
            if not cursor:
                break
    contents = [m["content"] for m in stored]
    assert len(contents) == len(set(contents)), "a write landed twice"
    ids = {m["memory_id"] for m in stored}
    assert {mid for _, mid in acked} <= ids, "an acknowledged write is missing"
    # The killed replica comes back once the intent grace has passed (as a supervisor's restart
    # does): its open checks reconcile the write it was killed in, with one `recovered` row. A
    # restart inside the grace leaves that intent open, to the next open check.
    time.sleep(max(0.0, killed_at + INTENT_GRACE_S + 1.0 - time.monotonic()))
    restarted = _spawn(pg_db, secret, tmp_path, 3)
    try:
        with restarted.client(_key(keys, "root", roles=["admin"])) as c:
            rows = c.get("/api/v1/audit", params={"limit": 1000}).json()
    finally:
        restarted.process.send_signal(signal.SIGTERM)
        restarted.process.wait(20)
    audited = sorted(mid for r in rows if r["action"] in ("write", "recovered") for mid in r["memory_ids"])
    assert audited == sorted(ids), "a stored memory has no audit row, or more than one"
