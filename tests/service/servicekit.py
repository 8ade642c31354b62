"""Test kit of the memory service: start a REAL `viking-bridge serve` process on loopback.

`spawn_service(tmp, **env)` starts one on a random free port with every credential kind
configured (API keys in a SQLite store, an RSA-signed JWT issuer, a gateway secret), waits for
/ready and returns a `Service` handle that issues credentials and stops the process by its pid
(SIGTERM, then waits). The session-scoped `service` fixture (conftest.py) uses it once per
test session; tests that need other limits, or kill the process, spawn their own.

The server runs in its own process group, watched by a reaper (`popen_reaped`): if the test
process dies without stopping it (a crash, a SIGKILL, an xdist worker torn down), the group (the
serve process and its workers) is ended with it instead of serving on, an orphan holding a port
and a CPU into the next run.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from contract_tests.reaper import popen_reaped, release_ended
from identity.providers.api_keys import ApiKeyStore
from identity.providers.gateway import sign_gateway_headers

ISSUER = "https://idp.test.invalid/"
AUDIENCE = "viking-bridge-tests"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Service:
    url: str
    home: Path
    process: subprocess.Popen
    keys: ApiKeyStore
    gateway_secret: str
    jwt_key: Any
    log_path: Path
    err_path: Path
    _clients: list[httpx.Client] = field(default_factory=list)

    # -- credentials ---------------------------------------------------------------------
    def api_key(self, user: str, *, tenant: str = "acme", agent: str = "assistant", departments: Iterable[str] = (), workspace: str | None = None, roles: Iterable[str] = ()) -> str:
        return self.keys.issue(tenant_id=tenant, user_id=user, agent_id=agent, department_ids=departments, workspace_id=workspace, roles=roles, label="service-tests").key

    def client(self, key: str | None = None, **headers: str) -> httpx.Client:
        base = {"X-API-Key": key} if key else {}
        c = httpx.Client(base_url=self.url, headers={**base, **headers}, timeout=30.0)
        self._clients.append(c)
        return c

    def token(self, user: str, *, tenant: str = "acme", agent: str = "assistant", roles: Iterable[str] = (), groups: Iterable[str] = (), ttl: int = 300, **extra: Any) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": user, "tid": tenant, "azp": agent, "roles": list(roles), "groups": list(groups), "iat": now, "exp": now + ttl, **extra}
        return jwt.encode(claims, self.jwt_key, algorithm="RS256")

    def gateway_headers(self, method: str, path: str, body: bytes | None, *, user: str, tenant: str = "acme", agent: str = "assistant", nonce: str | None = None, **kw: Any) -> dict[str, str]:
        # the service requires a nonce and the body digest by default: a fresh nonce unless the
        # test names one, and the digest of the body sent (an empty one when there is none)
        return sign_gateway_headers(self.gateway_secret, method=method, path=path, tenant_id=tenant, user_id=user, agent_id=agent,
                                    body=b"" if body is None else body, nonce=nonce or secrets.token_hex(12), **kw)

    # -- lifecycle -----------------------------------------------------------------------
    def log_lines(self) -> list[str]:
        return self.log_path.read_text(encoding="utf-8").splitlines() if self.log_path.exists() else []

    def stop(self, timeout: float = 30.0) -> int:
        for c in self._clients:
            c.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        release_ended()  # what is left of this server's group (a worker), and its watcher
        self.keys.close()
        return self.process.returncode


def spawn_service(tmp: Path, *, workers: int = 1, env: dict[str, str] | None = None, ready_timeout: float = 60.0) -> Service:
    tmp.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    port = free_port()
    gateway_secret = secrets.token_hex(32)
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("VIKING_BRIDGE_", "PROMETHEUS_"))},
        "VIKING_BRIDGE_HOME": str(tmp / "home"),
        "VIKING_BRIDGE_SERVICE_PROVIDERS": "api_key,jwt,gateway",
        "VIKING_BRIDGE_API_KEYS__DB_PATH": str(tmp / "keys.sqlite3"),
        "VIKING_BRIDGE_JWT__ISSUER": ISSUER,
        "VIKING_BRIDGE_JWT__AUDIENCE": AUDIENCE,
        "VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM": pem,
        "VIKING_BRIDGE_GATEWAY__SECRET": gateway_secret,
        "VIKING_BRIDGE_SERVICE_RATE_BURST": "100000",
        "VIKING_BRIDGE_SERVICE_SHUTDOWN_GRACE_SECONDS": "20",
        **(env or {}),
    }
    keys = ApiKeyStore(tmp / "keys.sqlite3")
    log_path, err_path = tmp / "access.log", tmp / "server.err"
    with open(log_path, "wb") as out, open(err_path, "wb") as err:
        process = popen_reaped(
            [sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
            env=full_env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
        )
    service = Service(f"http://127.0.0.1:{port}", tmp / "home", process, keys, gateway_secret, key, log_path, err_path)
    try:
        wait_until_ready(service.url, process, err_path, ready_timeout)
    except RuntimeError:
        service.stop()
        raise
    return service


def wait_until_ready(url: str, process: subprocess.Popen, err_path: Path, timeout: float) -> None:
    """Poll `url/ready` until it answers 200; raise with the server's stderr if it exits or stalls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the service exited with {process.returncode}: {err_path.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/ready", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the service did not become ready in {timeout} s: {err_path.read_text()[-3000:]}")


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The response is RFC 9457 problem+json with this status, and carries no stack trace."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers["content-type"]
    body = response.json()
    assert body["status"] == status and body["type"].startswith("urn:viking-bridge:problem:") and body["title"]
    assert "Traceback" not in response.text and 'File "' not in response.text
    return body
