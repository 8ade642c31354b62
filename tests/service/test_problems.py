"""Every error status is RFC 9457 problem+json, never a stack trace (against the real server)."""

from __future__ import annotations

import secrets

import httpx
import pytest

from tests.service.servicekit import Service, assert_problem, spawn_service


def test_each_client_error_status_is_problem_json(service: Service) -> None:
    c = service.client(service.api_key("prob-u1", workspace="alpha"))
    assert_problem(c.post("/api/v1/recall", content=b"{not json", headers={"content-type": "application/json"}), 400)
    assert_problem(c.post("/api/v1/recall", json={"query": "q", "include_scopes": ["not a scope!"]}), 400)
    assert_problem(httpx.get(service.url + "/api/v1/recall", params={"query": "q"}), 401)
    assert_problem(c.post("/api/v1/memories", json={"content": "tenant-wide", "kind": "fact", "visibility": "tenant"}), 403)
    assert_problem(c.get(f"/api/v1/memories/{secrets.token_hex(16)}", params={"scope": "acme/user/prob-u1"}), 404)
    assert_problem(c.get("/api/v1/no-such-route"), 404)
    key = "idem-" + secrets.token_hex(6)
    assert c.post("/api/v1/memories", json={"content": "first", "kind": "note", "idempotency_key": key}).status_code == 201
    assert_problem(c.post("/api/v1/memories", json={"content": "second", "kind": "note", "idempotency_key": key}), 409)
    assert_problem(c.post("/api/v1/memories", content=b"{" + b" " * (2 * 1024 * 1024) + b"}", headers={"content-type": "application/json"}), 413)
    assert_problem(c.get("/api/v1/recall", params={"query": "q" * 9000}), 414)
    assert_problem(c.post("/api/v1/memories", json={"content": "c", "kind": "no-such-kind"}), 422)


@pytest.fixture(scope="module")
def strict_service(tmp_path_factory: pytest.TempPathFactory):
    """A service whose every operation times out and whose bucket holds 3 requests."""
    handle = spawn_service(tmp_path_factory.mktemp("strict"), env={
        "VIKING_BRIDGE_SERVICE_RATE_BURST": "3", "VIKING_BRIDGE_SERVICE_RATE_PER_SECOND": "0.01",
        "VIKING_BRIDGE_SERVICE_REQUEST_TIMEOUT_SECONDS": "0.000001",
    })
    try:
        yield handle
    finally:
        handle.stop()


def test_timeout_is_503_and_an_empty_bucket_is_429_with_retry_after(strict_service: Service) -> None:
    c = strict_service.client(strict_service.api_key("strict-u1"))
    for _ in range(3):  # capture extracts off the event loop, so it always outlives 1 µs
        timed_out = c.post("/api/v1/capture", json={"content": "I prefer green tea"})
        assert assert_problem(timed_out, 503)["error"] == "RequestTimeout"
        assert int(timed_out.headers["Retry-After"]) >= 1
    limited = c.get("/api/v1/recall", params={"query": "q"})
    assert_problem(limited, 429)
    assert int(limited.headers["Retry-After"]) >= 1
    # another identity has its own bucket
    other = strict_service.client(strict_service.api_key("strict-u2"))
    assert other.post("/api/v1/capture", json={"content": "I prefer green tea"}).status_code == 503
