"""The admin console's routes over HTTP, without a browser: tenant admins only, their own
tenant only, the page public but data-free, and whoami reporting only the caller."""

from __future__ import annotations

import secrets

import httpx

from identity.providers.api_keys import parse_api_key
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


def test_member_gets_403_on_every_new_console_route(service: Service) -> None:
    t = _tenant()
    member = service.client(service.api_key("alice", tenant=t, departments=["eng"]))
    admin = service.client(service.api_key("root", tenant=t, roles=["admin"]))
    key_id = admin.get("/api/v1/admin/keys").json()[0]["key_id"]
    scope = f"{t}/dept/eng"
    for method, path, kwargs in (
        ("GET", "/api/v1/admin/memories", {"params": {"scope": scope}}),
        ("GET", "/api/v1/admin/directory", {}),
        ("GET", "/api/v1/admin/keys", {}),
        ("POST", "/api/v1/admin/keys", {"json": {"for_user": "mallory", "with_roles": ["admin"]}}),
        ("DELETE", f"/api/v1/admin/keys/{key_id}", {}),
    ):
        assert_problem(member.request(method, path, **kwargs), 403)
    after = admin.get("/api/v1/admin/keys").json()
    assert key_id in {k["key_id"] for k in after}, "the member's refused revoke left the key alone"
    assert all(k["user_id"] != "mallory" for k in after), "the member's refused issue made no key"


def test_admin_issues_a_key_that_works_and_revokes_it_at_once(service: Service) -> None:
    t, other = _tenant(), _tenant()
    admin = service.client(service.api_key("root", tenant=t, roles=["admin"]))
    foreign = service.api_key("gina", tenant=other)
    made = admin.post("/api/v1/admin/keys", json={"for_user": "dora", "for_agent": "ci", "for_departments": ["eng"], "label": "ci"})
    assert made.status_code == 201, made.text
    body = made.json()
    dora = service.client(body["key"])
    assert dora.get("/api/v1/admin/whoami").json()["principal"] == f"{t}/dora@ci"
    listed = admin.get("/api/v1/admin/keys").json()
    assert body["record"]["key_id"] in {k["key_id"] for k in listed} and all("key" not in k for k in listed)
    assert all(k["user_id"] != "gina" for k in listed), "never another tenant's keys"
    assert_problem(admin.delete(f"/api/v1/admin/keys/{parse_api_key(foreign)[0]}"), 404)  # another tenant's key: absent, untouched
    assert service.client(foreign).get("/api/v1/admin/whoami").status_code == 200
    assert admin.delete(f"/api/v1/admin/keys/{body['record']['key_id']}").json() == {"deleted": True}
    assert_problem(dora.get("/api/v1/admin/whoami"), 401)
    refused = admin.delete(f"/api/v1/admin/keys/{body['key']}")
    assert refused.status_code in (400, 404, 422) and parse_api_key(body["key"])[1] not in refused.text, "a whole key is never echoed"
    bad_role = admin.post("/api/v1/admin/keys", json={"for_user": "x", "with_roles": ["superuser"]})
    assert_problem(bad_role, 400)
    assert "admin, approver, global_admin" in bad_role.json()["detail"]


def test_audit_pages_back_and_filters_by_actor_over_http(service: Service) -> None:
    t = _tenant()
    admin = service.client(service.api_key("root", tenant=t, roles=["admin"]))
    member = service.client(service.api_key("alice", tenant=t))
    for n in range(5):
        member.post("/api/v1/memories", json={"content": f"note {n}", "kind": "note"})
    admin.post("/api/v1/grants", json={"grantee_user_id": "bob", "scope": f"{t}/user/alice", "ttl_seconds": 600, "reason": "r"})
    everything = [e["seq"] for e in admin.get("/api/v1/audit", params={"limit": 1000}).json()]
    first = admin.get("/api/v1/audit", params={"limit": 2}).json()
    older = admin.get("/api/v1/audit", params={"limit": 1000, "before_seq": first[-1]["seq"]}).json()
    assert [e["seq"] for e in first + older] == everything
    alice_rows = admin.get("/api/v1/audit", params={"actor": f"{t}/alice@assistant"}).json()
    assert len(alice_rows) == 5 and {e["actor"] for e in alice_rows} == {f"{t}/alice@assistant"}
