"""Authentication at the edge, over real HTTP: identity only from credentials."""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.service.servicekit import Service, assert_problem


def _post(service: Service, path: str, payload: dict, headers: dict[str, str]) -> httpx.Response:
    body = json.dumps(payload).encode()
    return httpx.post(service.url + path, content=body, headers={"content-type": "application/json", **headers}, timeout=30)


def test_caller_cannot_choose_identity_through_body_fields(service: Service) -> None:
    c = service.client(service.api_key("body-u1", workspace="alpha", agent="maomao"))
    # seed 000's caller fields: equal to the credential -> accepted
    ok = c.post("/api/v1/capture", json={"content": "I prefer tabs over spaces", "agent_id": "maomao", "user_id": "body-u1", "team_id": "alpha"})
    assert ok.status_code == 200, ok.text
    assert all(w["scope"].startswith("acme/") for w in ok.json()["written"])
    # naming anybody else -> 403, whichever field
    for field, value in (("agent_id", "wukong"), ("user_id", "someone-else"), ("team_id", "beta")):
        assert_problem(c.post("/api/v1/capture", json={"content": "x is y", field: value}), 403)
    assert_problem(c.get("/api/v1/recall", params={"query": "tabs", "agent_id": "wukong"}), 403)
    assert_problem(c.post("/api/v1/recall", json={"query": "tabs", "user_id": "admin"}), 403)
    # each attempt is on record as the caller's refusal, like the policy's own refusals: the
    # door's (a field naming another agent or user) and the policy's (team_id names a team
    # the caller is no member of: refused by the capture operation itself)
    denied = c.get("/api/v1/audit", params={"action": "denied", "limit": 50})
    assert denied.status_code == 200, denied.text
    assert sorted(r["detail"]["operation"] for r in denied.json()) == sorted(["POST /api/v1/capture"] * 2 + ["capture", "GET /api/v1/recall", "POST /api/v1/recall"])
    # fields that could only widen identity are not even part of the model
    for field, value in (("tenant_id", "globex"), ("roles", ["admin"]), ("session_id", "s" * 16)):
        assert_problem(c.post("/api/v1/memories", json={"content": "c", "kind": "note", field: value}), 422)


def test_unsigned_gateway_headers_are_rejected_not_ignored(service: Service) -> None:
    key = service.api_key("vb-u1")
    # with a valid API key, an extra X-VB-User does not get ignored: two credentials -> 401
    r = httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers={"X-API-Key": key, "X-VB-User": "admin"})
    assert_problem(r, 401)
    # alone and unsigned -> 401
    r = httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers={"X-VB-Tenant": "acme", "X-VB-User": "admin", "X-VB-Agent": "a"})
    body = assert_problem(r, 401)
    assert "WWW-Authenticate" in r.headers and "sign" in body["detail"].lower()


def test_signed_gateway_request_authenticates_and_binds_the_body(service: Service) -> None:
    payload = json.dumps({"query": "gateway memory"}).encode()
    headers = service.gateway_headers("POST", "/api/v1/recall", payload, user="gw-u1", nonce=secrets.token_hex(12))
    r = httpx.post(service.url + "/api/v1/recall", content=payload, headers={**headers, "content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["identity"] == "acme/gw-u1@assistant"
    # the same signature over another body: refused
    other = json.dumps({"query": "something else"}).encode()
    headers = service.gateway_headers("POST", "/api/v1/recall", payload, user="gw-u1", nonce=secrets.token_hex(12))
    assert_problem(httpx.post(service.url + "/api/v1/recall", content=other, headers={**headers, "content-type": "application/json"}), 401)


def test_by_default_a_gateway_signature_must_bind_the_body_and_carry_a_nonce(service: Service) -> None:
    """The service's default mode: a signature without X-VB-Content-SHA256 would carry any body,
    one without X-VB-Nonce could be replayed; both are refused (docs/service.md, docs/security.md)."""
    from identity.providers.gateway import sign_gateway_headers

    payload = json.dumps({"query": "unbound"}).encode()
    sign = lambda **kw: sign_gateway_headers(service.gateway_secret, method="POST", path="/api/v1/recall", tenant_id="acme", user_id="gw-lax", agent_id="assistant", **kw)  # noqa: E731
    unbound = sign(nonce=secrets.token_hex(12))
    r = httpx.post(service.url + "/api/v1/recall", content=payload, headers={**unbound, "content-type": "application/json"})
    assert "X-VB-Content-SHA256" in assert_problem(r, 401)["detail"]
    replayable = sign(body=payload)
    r = httpx.post(service.url + "/api/v1/recall", content=payload, headers={**replayable, "content-type": "application/json"})
    assert "X-VB-Nonce" in assert_problem(r, 401)["detail"]


def test_gateway_nonce_replayed_to_another_worker_is_refused(service: Service) -> None:
    payload = json.dumps({"query": "replay"}).encode()
    headers = {**service.gateway_headers("POST", "/api/v1/recall", payload, user="gw-replay", nonce=secrets.token_hex(16)), "content-type": "application/json"}
    first = httpx.post(service.url + "/api/v1/recall", content=payload, headers=headers)
    assert first.status_code == 200, first.text
    first_worker = first.headers["x-served-by"]

    def replay(_: int) -> httpx.Response:
        return httpx.post(service.url + "/api/v1/recall", content=payload, headers=headers)  # a new connection each time

    workers: set[str] = set()
    with ThreadPoolExecutor(8) as pool:
        for _ in range(10):  # rounds until the kernel has handed a replay to the other worker
            replays = list(pool.map(replay, range(32)))
            for r in replays:
                assert_problem(r, 401)
            workers |= {r.headers["x-served-by"] for r in replays}
            if workers - {first_worker}:
                break
    assert workers - {first_worker}, "no replay reached the other worker; the test proved nothing about the shared nonce cache"


def test_bearer_jwt_authenticates_and_a_forged_one_does_not(service: Service) -> None:
    token = service.token("jwt-u1", agent="coder")
    r = httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    assert r.json()["identity"] == "acme/jwt-u1@coder"
    head, claims, sig = token.split(".")
    assert_problem(httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers={"Authorization": f"Bearer {head}.{claims}.{sig[::-1]}"}), 401)
    assert_problem(httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers={"Authorization": "Basic dXNlcjpwYXNz"}), 401)


def test_api_key_in_either_header_form(service: Service) -> None:
    key = service.api_key("form-u1")
    for headers in ({"X-API-Key": key}, {"Authorization": f"ApiKey {key}"}):
        r = httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers=headers)
        assert r.status_code == 200 and r.json()["identity"] == "acme/form-u1@assistant"
    assert_problem(httpx.get(service.url + "/api/v1/recall", params={"query": "q"}), 401)
    assert_problem(httpx.get(service.url + "/api/v1/recall", params={"query": "q"}, headers={"X-API-Key": key[:-2] + "xx"}), 401)


def test_another_identity_cannot_continue_a_bound_session(service: Service) -> None:
    key_a = service.api_key("sess-a")
    bound = service.client(key_a).post("/api/v1/sessions")
    assert bound.status_code == 200, bound.text
    session = bound.json()["session_id"]
    a = service.client(key_a, **{"X-Session-Id": session})
    b = service.client(service.api_key("sess-b"), **{"X-Session-Id": session})
    assert a.get("/api/v1/recall", params={"query": "q"}).status_code == 200
    assert_problem(b.get("/api/v1/recall", params={"query": "q"}), 403)
