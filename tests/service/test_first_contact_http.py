"""First contact with the service: a home at `/` (not a 401), an API key accepted as a bearer
token (while every other bearer token is still verified as a JWT), and a JSON body without a
Content-Type read as JSON (one declared as something else: a clear 415)."""

from __future__ import annotations

import json

import httpx

from contract_tests.reaper import popen_reaped
from tests.service.servicekit import Service, assert_problem


def test_the_home_names_the_console_and_the_api_docs(service: Service) -> None:
    r = httpx.get(service.url + "/", timeout=30)
    assert r.status_code == 200 and r.json()["links"]["console"] == "/admin/" and r.json()["links"]["api_docs"] == "/docs"
    page = httpx.get(service.url + "/", headers={"Accept": "text/html"}, timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'href="/admin/"' in page.text and 'href="/docs"' in page.text and "script" not in page.text.lower()


def test_an_api_key_sent_as_a_bearer_token_is_an_api_key(service: Service) -> None:
    key = service.api_key("bearer-u1")
    c = service.client(Authorization=f"Bearer {key}")
    r = c.post("/api/v1/memories", json={"content": "sent with a bearer key", "kind": "note"})
    assert r.status_code == 201, r.text
    assert c.get("/api/v1/admin/whoami").json()["user_id"] == "bearer-u1"
    # a wrong key in that form is a plain 401 for the key, never tried as a JWT
    bad = assert_problem(service.client(Authorization=f"Bearer {key[:-4]}abcd").get("/api/v1/admin/whoami"), 401)
    assert "jwt" not in bad["detail"].lower()
    # and a JWT is still verified as a JWT: a forged one is refused
    forged = service.token("bearer-u1")[:-6] + "AAAAAA"
    assert_problem(service.client(Authorization=f"Bearer {forged}").get("/api/v1/admin/whoami"), 401)
    assert service.client(Authorization=f"Bearer {service.token('bearer-u1')}").get("/api/v1/admin/whoami").status_code == 200


def test_a_body_without_content_type_is_read_as_json(service: Service) -> None:
    key = service.api_key("ctype-u1")
    c = service.client(key)
    raw = json.dumps({"content": "no content type here", "kind": "note"}).encode()
    r = c.post("/api/v1/memories", content=raw, headers={"Content-Type": ""})
    assert r.status_code == 201, r.text
    req = c.build_request("POST", "/api/v1/memories", content=raw)
    if "content-type" in req.headers:
        del req.headers["content-type"]
    assert "content-type" not in req.headers
    assert c.send(req).status_code == 201
    form = assert_problem(c.post("/api/v1/memories", content=raw, headers={"Content-Type": "application/x-www-form-urlencoded"}), 415)
    assert "application/json" in form["detail"]


def test_serve_prints_its_home_and_console_at_start(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIKING_")}
    env.update(VIKING_BRIDGE_HOME=str(tmp_path / "home"), VIKING_BRIDGE_PROVIDER="api_key", VIKING_BRIDGE_API_KEYS__DB_PATH=str(tmp_path / "keys.sqlite3"))
    proc = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        lines = []
        for _ in range(20):  # the line comes before uvicorn's own
            lines.append(proc.stderr.readline())
            if "/admin/" in lines[-1] or not lines[-1]:
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert f"http://127.0.0.1:{port}/admin/" in lines[-1] and f"http://127.0.0.1:{port}/docs" in lines[-1], lines
