"""`viking-bridge serve` configured by environment alone in front of hosted Viking (the simulator
over real HTTP) and a real OpenViking server.

What the service is for: agents hold only their bridge credential and the bridge alone holds the
backend's key. So each test starts a real `serve` process whose backend secret arrives only by
environment (some through `..._FILE`, the way container secrets are mounted), writes and recalls
with a bridge API key, shows that another tenant sees nothing, provokes a backend failure where
it can, and then searches every response body, the access log, the server's stderr and
/metrics for every backend secret: none may appear anywhere.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from contract_tests.reaper import popen_reaped
from tests.service.servicekit import Service, spawn_service


@pytest.fixture
def viking_sim() -> Iterator[tuple[dict[str, str], subprocess.Popen]]:
    """The Viking simulator over real HTTP (one per test: its state and keys are fresh)."""
    proc = popen_reaped(
        [sys.executable, "-m", "contract_tests.viking_simulator"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError(f"the simulator did not start: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
        yield json.loads(line), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def _openviking(mode: str) -> tuple[str, str]:
    from contract_tests.backends.openviking import _unavailable, shared_server

    reason = _unavailable(mode)
    if reason is not None:
        pytest.skip(f"OpenViking ({mode}) unavailable: {reason}")
    return shared_server(mode)


class Transcript:
    """Every response body the test received, to search for secrets afterwards."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def keep(self, response: httpx.Response) -> httpx.Response:
        self.bodies.append(f"{response.request.method} {response.request.url.path} -> {response.status_code}\n{dict(response.headers)}\n{response.text}")
        return response


def _write_recall_isolation(service: Service, seen: Transcript) -> None:
    marker = "obsidian-" + secrets.token_hex(4)
    alice = service.client(service.api_key("env-alice", tenant="acme", roles=["admin"]))
    globex = service.client(service.api_key("env-alice", tenant="globex", roles=["admin"]))
    written = seen.keep(alice.post("/api/v1/memories", json={"content": f"{marker} alice prefers green tea", "kind": "preference"}))
    assert written.status_code == 201, written.text
    memory = written.json()
    recalled = seen.keep(alice.get("/api/v1/recall", params={"query": f"{marker} green tea"}))
    assert recalled.status_code == 200, recalled.text
    assert memory["memory_id"] in {m["memory_id"] for m in recalled.json()["memories"]}  # positive control
    got = seen.keep(alice.get(f"/api/v1/memories/{memory['memory_id']}", params={"scope": memory["scope"]}))
    assert got.status_code == 200 and got.json()["content"] == f"{marker} alice prefers green tea", got.text

    other = seen.keep(globex.get("/api/v1/recall", params={"query": f"{marker} green tea"}))
    assert other.status_code == 200, other.text
    assert marker not in other.text, f"another tenant saw acme's memory: {other.text[:300]}"
    assert seen.keep(globex.get(f"/api/v1/memories/{memory['memory_id']}", params={"scope": memory["scope"]})).status_code == 403
    seen.keep(alice.get("/api/v1/audit", params={"limit": 1000}))
    seen.keep(alice.get("/api/v1/whoami"))
    seen.keep(httpx.get(service.url + "/metrics"))
    seen.keep(httpx.get(service.url + "/ready"))


def _assert_no_secret_anywhere(service: Service, seen: Transcript, backend_secrets: list[str]) -> None:
    service.stop()
    places = {"responses": "\n".join(seen.bodies), "access log": service.log_path.read_text(errors="replace"), "stderr": service.err_path.read_text(errors="replace")}
    assert places["responses"], "nothing was recorded (the search below would pass vacuously)"
    for secret in backend_secrets:
        assert len(secret) >= 8  # a short string could appear by chance
        for where, text in places.items():
            assert secret not in text, f"a backend secret appears in the {where}"


def _secret_file(tmp_path: Path, name: str, value: str) -> str:
    path = tmp_path / "secrets" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(value + "\n")  # mounted secrets usually end with a newline
    path.chmod(0o600)
    return str(path)


@pytest.mark.parametrize("auth", ["api_key_file", "signer_v4"])
def test_serve_fronts_the_viking_simulator_over_http_by_environment_alone(tmp_path: Path, viking_sim, auth: str) -> None:
    line, sim_process = viking_sim
    env = {
        "VIKING_BRIDGE_BACKEND": "viking",
        "VIKING_BRIDGE_VIKING__URL": line["url"],
        "VIKING_BRIDGE_VIKING__COLLECTION": line["collection"],
        "VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION": line["global_collection"],
        "VIKING_BRIDGE_EMBEDDER": "hashing",
    }
    if auth == "api_key_file":
        env["VIKING_BRIDGE_VIKING__API_KEY_FILE"] = _secret_file(tmp_path, "viking-api-key", line["api_key"])
        backend_secrets = [line["api_key"]]
    else:
        env.update({
            "VIKING_BRIDGE_VIKING__ACCESS_KEY": line["access_key"],
            "VIKING_BRIDGE_VIKING__SECRET_KEY_FILE": _secret_file(tmp_path, "viking-sk", line["secret_key"]),
            "VIKING_BRIDGE_VIKING__REGION": line["region"],
        })
        backend_secrets = [line["secret_key"]]
    service = spawn_service(tmp_path, env=env)
    seen = Transcript()
    try:
        _write_recall_isolation(service, seen)
        assert (tmp_path / "home" / "viking" / "viking-write-ledger.sqlite3").is_file()  # the ledger's default place
        # The backend goes away: the answers are problems, and they carry no secret either.
        sim_process.send_signal(signal.SIGTERM)
        sim_process.wait(15)
        alice = service.client(service.api_key("env-alice", tenant="acme"))
        failed = seen.keep(alice.post("/api/v1/memories", json={"content": "written while Viking is down", "kind": "fact"}))
        assert failed.status_code >= 500 and failed.headers["content-type"].startswith("application/problem+json"), failed.text
        seen.keep(alice.get("/api/v1/recall", params={"query": "anything"}))
        seen.keep(httpx.get(service.url + "/metrics"))
    finally:
        _assert_no_secret_anywhere(service, seen, backend_secrets)


@pytest.mark.parametrize("mode", ["api_key", "trusted"])
def test_serve_fronts_a_real_openviking_server_by_environment_alone(tmp_path: Path, mode: str) -> None:
    url, root_key = _openviking(mode)
    env = {
        "VIKING_BRIDGE_BACKEND": "openviking",
        "VIKING_BRIDGE_OPENVIKING__URL": url,
        "VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY_FILE": _secret_file(tmp_path, "ov-root-key", root_key),
        "VIKING_BRIDGE_OPENVIKING__MODE": mode,
        "VIKING_BRIDGE_OPENVIKING__NAMESPACE": "sv" + secrets.token_hex(4),  # a throw-away namespace on the shared server
        "VIKING_BRIDGE_EMBEDDER": "hashing",
    }
    service = spawn_service(tmp_path, env=env)
    seen = Transcript()
    try:
        _write_recall_isolation(service, seen)
    finally:
        _assert_no_secret_anywhere(service, seen, [root_key])
    if mode == "api_key":  # the per-user keys it minted are kept under HOME by default, never in plain sight
        store = tmp_path / "home" / "openviking-keys.json"
        assert store.is_file() and root_key not in store.read_text(errors="replace")


def test_a_viking_service_that_cannot_read_its_secret_file_does_not_start(tmp_path: Path) -> None:
    env = {
        "VIKING_BRIDGE_BACKEND": "viking",
        "VIKING_BRIDGE_VIKING__URL": "http://127.0.0.1:9",
        "VIKING_BRIDGE_VIKING__COLLECTION": "c1",
        "VIKING_BRIDGE_VIKING__API_KEY_FILE": str(tmp_path / "missing-secret"),
    }
    with pytest.raises(RuntimeError) as exc:
        spawn_service(tmp_path, env=env, ready_timeout=60)
    assert "VIKING_BRIDGE_VIKING__API_KEY_FILE" in str(exc.value)
