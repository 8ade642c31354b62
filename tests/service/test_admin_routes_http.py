"""The admin console's routes over HTTP, without a browser: tenant admins only, their own
tenant only, the page public but data-free, and whoami reporting only the caller."""

from __future__ import annotations

import secrets

import httpx

from tests.service.servicekit import Service, assert_problem


def _tenant() -> str:
    return "h" + secrets.token_hex(4)


def test_member_cannot_reach_any_tenant_admin_route(service: Service) -> None:
    t = _tenant()
    member = service.client(service.api_key("alice", tenant=t, departments=["eng"]))
    w = member.post("/api/v1/memories", json={"content": "a member's note", "kind": "note"}).json()
    for path, params in (("/api/v1/admin/grants", {}), ("/api/v1/admin/manifests", {}), ("/api/v1/admin/scopes", {}),
                         (f"/api/v1/admin/memories/{w['memory_id']}/readers", {"scope": w["scope"]})):
        assert_problem(member.get(path, params=params), 403)
    assert member.get("/api/v1/admin/whoami").json()["principal"] == f"{t}/alice@assistant"


def test_admin_of_another_tenant_gets_nothing_and_no_existence_oracle(service: Service) -> None:
    a, b = _tenant(), _tenant()
    a_member = service.client(service.api_key("alice", tenant=a, departments=["eng"]))
    a_admin = service.client(service.api_key("root", tenant=a, roles=["admin"]))
    b_admin = service.client(service.api_key("root", tenant=b, roles=["admin"]))
    w = a_member.post("/api/v1/memories", json={"content": "A's standard", "kind": "standard"}).json()
    a_admin.post("/api/v1/grants", json={"grantee_user_id": "bob", "scope": f"{a}/dept/eng", "ttl_seconds": 600, "reason": "r"})
    assert b_admin.get("/api/v1/admin/grants", params={"include_inactive": True}).json() == []
    assert b_admin.get("/api/v1/admin/scopes").json() == []
    assert b_admin.get("/api/v1/admin/manifests").json() == []
    real = b_admin.get(f"/api/v1/admin/memories/{w['memory_id']}/readers", params={"scope": w["scope"]})
    made_up = b_admin.get("/api/v1/admin/memories/nosuchid/readers", params={"scope": w["scope"]})
    assert_problem(real, 403)
    assert_problem(made_up, 403)
    assert real.json()["detail"] == made_up.json()["detail"]
    ok = a_admin.get(f"/api/v1/admin/memories/{w['memory_id']}/readers", params={"scope": w["scope"]})
    assert ok.status_code == 200 and "content" not in ok.json() and w["memory_id"] == ok.json()["memory_id"]
    assert [c["scope"] for c in a_admin.get("/api/v1/admin/scopes").json()] == [f"{a}/dept/eng"]


def test_console_page_needs_no_credential_but_holds_no_data(service: Service) -> None:
    for path in ("/admin", "/admin/", "/admin/console.js", "/admin/console.css", "/admin/favicon.svg"):
        r = httpx.get(service.url + path)
        assert r.status_code == 200 and "content-security-policy" in r.headers, path
    assert_problem(httpx.get(service.url + "/admin/anything-else"), 401)  # only the listed files are public
    assert_problem(httpx.get(service.url + "/api/v1/admin/scopes"), 401)
