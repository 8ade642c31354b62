"""A real `serve` process whose identity secrets arrive only as files (`..._FILE`): the gateway's
signing secret and its previous (rotated) secret, beside a backend secret (the export seal key,
read at start-up with the bridge settings).

Checked: requests signed with either secret are served and one signed with anything else is a
401 problem; and after the run, no secret appears in any access-log line, the server's stderr,
any response body (problems included) or /metrics. Then two start-ups that must fail: a value and
a different file for the gateway secret, and a file that cannot be read: each names the setting
and prints no secret."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import httpx

from identity.providers import sign_gateway_headers
from tests.service.servicekit import assert_problem, spawn_service

ROOT = Path(__file__).resolve().parents[2]


def _secret_file(tmp_path: Path, name: str, value: str) -> str:
    path = tmp_path / "secrets" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(value + "\n")
    path.chmod(0o600)
    return str(path)


def _signed(secret: str, method: str, path: str, body: bytes | None, user: str) -> dict[str, str]:
    return sign_gateway_headers(secret, method=method, path=path, tenant_id="acme", user_id=user, agent_id="assistant",
                                body=b"" if body is None else body, nonce=secrets.token_hex(12), roles=["admin"])


def test_identity_secrets_from_files_work_and_appear_nowhere_after_a_run(tmp_path: Path) -> None:
    current, previous, export_key = secrets.token_hex(32), secrets.token_hex(32), secrets.token_hex(32)
    service = spawn_service(tmp_path, env={
        "VIKING_BRIDGE_SERVICE_PROVIDERS": "gateway,api_key",
        "VIKING_BRIDGE_GATEWAY__SECRET": "",  # the kit sets one; only the file may hold it here
        "VIKING_BRIDGE_GATEWAY__SECRET_FILE": _secret_file(tmp_path, "gateway", current),
        "VIKING_BRIDGE_GATEWAY__PREVIOUS_SECRETS_FILE": _secret_file(tmp_path, "gateway-previous", previous),
        "VIKING_BRIDGE_EXPORT_KEY_FILE": _secret_file(tmp_path, "export", export_key),
    })
    bodies: list[str] = []

    def keep(response: httpx.Response) -> httpx.Response:
        bodies.append(f"{response.status_code} {dict(response.headers)}\n{response.text}")
        return response

    try:
        with httpx.Client(base_url=service.url, timeout=30.0) as http:
            for secret, user in ((current, "gw-alice"), (previous, "gw-bob")):
                body = json.dumps({"content": f"{user} keeps the secret files apart", "kind": "fact"}).encode()
                written = keep(http.post("/api/v1/memories", content=body,
                                         headers={"content-type": "application/json", **_signed(secret, "POST", "/api/v1/memories", body, user)}))
                assert written.status_code == 201, written.text
                who = keep(http.get("/api/v1/admin/whoami", headers=_signed(secret, "GET", "/api/v1/admin/whoami", None, user)))
                assert who.status_code == 200 and who.json()["user_id"] == user, who.text
            forged = keep(http.get("/api/v1/admin/whoami", headers=_signed(secrets.token_hex(32), "GET", "/api/v1/admin/whoami", None, "gw-alice")))
            assert_problem(forged, 401)
            keep(http.get("/api/v1/recall", params={"query": "secret files"}))  # no credential: a problem too
            metrics = keep(http.get("/metrics"))
            assert metrics.status_code == 200 and 'vb_denied_total{status="401"}' in metrics.text, metrics.text[:300]
    finally:
        service.stop()
    places = {"responses": "\n".join(bodies), "access log": service.log_path.read_text(errors="replace"),
              "stderr": service.err_path.read_text(errors="replace")}
    assert len(service.log_lines()) >= 6, "the access log recorded nothing (the search below would pass vacuously)"
    for name, secret in (("gateway secret", current), ("previous gateway secret", previous), ("export key", export_key)):
        for where, text in places.items():
            assert secret not in text, f"the {name} appears in the {where}"


def _start_failure(tmp_path: Path, env: dict[str, str]) -> tuple[int, str]:
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "PYTHONPATH": str(ROOT),
            "VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_SERVICE_PROVIDERS": "gateway", **env}
    done = subprocess.run([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", "0"],
                          cwd=ROOT, env=full, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout + done.stderr


def test_a_gateway_secret_given_twice_or_unreadable_stops_start_up_naming_the_setting_and_printing_no_secret(tmp_path: Path) -> None:
    in_file, in_value = secrets.token_hex(32), secrets.token_hex(32)
    code, output = _start_failure(tmp_path, {"VIKING_BRIDGE_GATEWAY__SECRET": in_value,
                                             "VIKING_BRIDGE_GATEWAY__SECRET_FILE": _secret_file(tmp_path, "gateway", in_file)})
    assert code != 0 and "VIKING_BRIDGE_GATEWAY__SECRET_FILE" in output and "both set" in output, output[-2000:]
    assert in_file not in output and in_value not in output and "Traceback" not in output

    unreadable = Path(_secret_file(tmp_path, "locked", in_file))
    unreadable.chmod(0o000)
    target = str(unreadable) if os.geteuid() != 0 else str(tmp_path / "secrets")  # root reads any file: a directory cannot be read as one
    code, output = _start_failure(tmp_path, {"VIKING_BRIDGE_GATEWAY__SECRET_FILE": target})
    assert code != 0 and f"VIKING_BRIDGE_GATEWAY__SECRET_FILE={target}" in output and "cannot read" in output, output[-2000:]
    assert in_file not in output and "Traceback" not in output
