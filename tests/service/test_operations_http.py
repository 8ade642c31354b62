"""/health, /ready, /metrics, the JSON access log, and graceful shutdown of a real process."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from identity.providers.api_keys import parse_api_key
from tests.service.servicekit import Service, spawn_service


def test_health_ready_and_metrics_need_no_credential_and_reveal_no_memory(service: Service) -> None:
    assert httpx.get(service.url + "/health").json()["status"] == "ok"
    ready = httpx.get(service.url + "/ready").json()
    assert ready == {"status": "ready", "checks": {"state": "ok", "backend": "ok", "disk": "ok"}}
    c = service.client(service.api_key("metrics-u1"))
    c.post("/api/v1/memories", json={"content": "metric-canary-content", "kind": "note"})
    c.get("/api/v1/recall", params={"query": "metric canary"})
    httpx.get(service.url + "/api/v1/recall", params={"query": "q"})  # a 401
    text = httpx.get(service.url + "/metrics").text
    assert 'vb_http_request_duration_seconds_bucket{' in text and 'route="/api/v1/recall"' in text
    assert "vb_recalls_total" in text and "vb_recall_scopes_bucket" in text and 'vb_denied_total{status="401"}' in text
    assert "vb_guard_alarms" in text  # (labelled series such as vb_backend_errors_total appear with their first sample)
    assert "metric-canary" not in text and "metrics-u1" not in text


def test_access_log_is_json_with_request_ids_and_no_content_credentials_or_query(service: Service) -> None:
    key = service.api_key("log-u1")
    secret_query = "query-text-canary-" + str(time.time_ns())
    r = httpx.get(service.url + "/api/v1/recall", params={"query": secret_query}, headers={"X-API-Key": key, "X-Request-Id": "req-canary-12345"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "req-canary-12345"
    httpx.post(service.url + "/api/v1/memories", json={"content": "content-canary-xyz", "kind": "note"}, headers={"X-API-Key": key})
    token = service.token("log-u2")
    httpx.get(service.url + "/api/v1/recall", params={"query": secret_query}, headers={"Authorization": f"Bearer {token}"})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any("req-canary-12345" in line for line in service.log_lines()):
        time.sleep(0.1)
    lines = service.log_lines()
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    assert any(e["request_id"] == "req-canary-12345" and e["route"] == "/api/v1/recall" and e["status"] == 200 for e in entries)
    everything = "\n".join(lines) + service.err_path.read_text()
    for forbidden in (secret_query, "content-canary", key, parse_api_key(key)[1], token):
        assert forbidden not in everything


def _raw_request_in_two_halves(url: str, key: str, payload: bytes) -> tuple[socket.socket, bytes]:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    head = (
        f"POST /api/v1/memories HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    half = len(payload) // 2
    sock.sendall(head + payload[:half])
    return sock, payload[half:]


@pytest.mark.slow
def test_sigterm_lets_in_flight_requests_finish_and_loses_no_acknowledged_write(tmp_path: Path) -> None:
    svc = spawn_service(tmp_path / "svc")
    key = svc.api_key("term-u1")
    acknowledged: list[dict] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            try:
                r = httpx.post(svc.url + "/api/v1/memories", json={"content": f"load write {n}-{i}", "kind": "note"}, headers={"X-API-Key": key}, timeout=30)
            except httpx.HTTPError:
                return  # refused or cut before an answer: never acknowledged
            if r.status_code == 201:
                acknowledged.append(r.json())
            i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    payload = json.dumps({"content": "the in-flight write", "kind": "note"}).encode()
    sock, rest = _raw_request_in_two_halves(svc.url, key, payload)
    time.sleep(0.3)  # the server has the request's head: it is in flight
    svc.process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    sock.sendall(rest)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    stop.set()
    for t in threads:
        t.join(60)
    assert answer.startswith(b"HTTP/1.1 201"), answer[:200]
    # uvicorn re-raises the signal after its graceful shutdown, so -SIGTERM is the clean exit
    assert svc.process.wait(60) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in svc.err_path.read_text()
    in_flight = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert acknowledged, "no write was acknowledged before the shutdown; the test proved nothing"

    again = spawn_service(tmp_path / "svc")  # same home: the store and state survive the restart
    try:
        c = again.client(key)
        for w in [*acknowledged, in_flight]:
            r = c.get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]})
            assert r.status_code == 200, f"acknowledged write {w['memory_id']} lost: {r.text}"
    finally:
        again.stop()
    svc.keys.close()
