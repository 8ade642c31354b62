"""Isolation between two tenants, and between users of one tenant, over HTTP."""

from __future__ import annotations

import secrets

from tests.service.servicekit import Service, assert_problem


def test_tenant_b_never_sees_tenant_a_memories_over_http(service: Service) -> None:
    marker = "zircon-" + secrets.token_hex(4)
    acme = service.client(service.api_key("iso-alice", tenant="acme", workspace="alpha", roles=["admin"]))
    globex = service.client(service.api_key("iso-alice", tenant="globex", workspace="alpha", roles=["admin"]))
    written = []
    for visibility, kind in (("private", "preference"), ("workspace", "fact"), ("tenant", "fact")):
        r = acme.post("/api/v1/memories", json={"content": f"{marker} {visibility} secret of acme", "kind": kind, "visibility": visibility})
        assert r.status_code == 201, r.text
        written.append(r.json())
    seen = acme.get("/api/v1/recall", params={"query": f"{marker} secret"}).json()
    assert {w["memory_id"] for w in written} <= {m["memory_id"] for m in seen["memories"]}  # positive control

    for r in (globex.get("/api/v1/recall", params={"query": f"{marker} secret"}), globex.post("/api/v1/recall", json={"query": marker, "include_scopes": []})):
        assert r.status_code == 200
        assert marker not in r.text, f"globex saw acme's memory: {r.text[:300]}"
    for w in written:
        assert_problem(globex.get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}), 403)
        assert_problem(globex.get("/api/v1/memories", params={"scope": w["scope"]}), 403)
        assert_problem(globex.patch(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}, json={"content": "overwritten"}), 403)
        assert globex.delete(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}).status_code == 403
    # a grant can never cross tenants, even for an admin
    assert_problem(globex.post("/api/v1/grants", json={"grantee_user_id": "iso-alice", "scope": "acme/ws/alpha", "ttl_seconds": 60, "reason": "try"}), 403)
    assert marker not in globex.get("/api/v1/audit", params={"limit": 1000}).text


def test_user_b_cannot_read_user_a_private_memory_by_reference(service: Service) -> None:
    a = service.client(service.api_key("ref-a"))
    b = service.client(service.api_key("ref-b"))
    w = a.post("/api/v1/memories", json={"content": "my private diary entry", "kind": "event"}).json()
    assert a.get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}).json()["content"] == "my private diary entry"
    assert_problem(b.get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}), 403)
    assert_problem(b.get("/api/v1/memories", params={"scope": w["scope"]}), 403)
