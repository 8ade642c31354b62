"""Over HTTP: find-by-key (per writer), recall narrowed with only_scopes (never widened), whoami.

Against the real service process (the shared `service` fixture); tenants are fresh per test so
the shared service's other tests cannot interfere.
"""

from __future__ import annotations

import secrets

from tests.service.servicekit import Service, assert_problem


def _tenant() -> str:
    return "t" + secrets.token_hex(4)


def test_alice_cannot_find_bobs_key_in_a_shared_workspace_over_http(service: Service) -> None:
    t = _tenant()
    alice = service.client(service.api_key("alice", tenant=t, workspace="alpha"))
    bob = service.client(service.api_key("bob", tenant=t, workspace="alpha"))
    scope = f"{t}/ws/alpha"
    w = bob.post("/api/v1/memories", json={"content": "bob: deploy on Mondays", "kind": "decision", "visibility": "workspace", "idempotency_key": "deploy-day"}).json()
    found = bob.get("/api/v1/memories/by-key/deploy-day", params={"scope": scope})
    assert found.status_code == 200 and found.json()["memory_id"] == w["memory_id"]  # positive control
    assert_problem(alice.get("/api/v1/memories/by-key/deploy-day", params={"scope": scope}), 404)
    assert_problem(alice.get("/api/v1/memories/by-key/deploy-day", params={"scope": f"{t}/user/bob"}), 403)
    assert_problem(alice.get("/api/v1/memories/by-key/deploy-day", params={"scope": "other/ws/alpha"}), 403)


def test_recall_only_scopes_naming_another_users_private_scope_is_refused_over_http(service: Service) -> None:
    t = _tenant()
    alice = service.client(service.api_key("alice", tenant=t, workspace="alpha"))
    bob = service.client(service.api_key("bob", tenant=t, workspace="alpha"))
    bob.post("/api/v1/memories", json={"content": "bob likes oolong tea", "kind": "preference"})
    alice.post("/api/v1/memories", json={"content": "alice likes oolong tea", "kind": "preference"})
    alice.post("/api/v1/memories", json={"content": "alpha's kitchen stocks oolong tea", "kind": "fact", "visibility": "workspace"})
    for call in (lambda: alice.post("/api/v1/recall", json={"query": "oolong tea", "only_scopes": [f"{t}/user/bob"]}),
                 lambda: alice.get("/api/v1/recall", params={"query": "oolong tea", "only_scopes": [f"{t}/user/bob"]})):
        assert_problem(call(), 403)
    assert_problem(alice.post("/api/v1/recall", json={"query": "oolong tea", "only_scopes": []}), 422)
    for r in (alice.post("/api/v1/recall", json={"query": "oolong tea", "min_score": 0.0, "only_scopes": [f"{t}/user/alice"]}),
              alice.get("/api/v1/recall", params={"query": "oolong tea", "min_score": 0.0, "only_scopes": [f"{t}/user/alice"]})):
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["scopes_searched"] == [f"{t}/user/alice"] and [m["content"] for m in body["memories"]] == ["alice likes oolong tea"]


def test_whoami_reports_the_callers_identity_and_default_scopes_and_nothing_secret(service: Service) -> None:
    t = _tenant()
    key = service.api_key("alice", tenant=t, departments=["eng"], workspace="alpha", roles=["approver"])
    r = service.client(key).get("/api/v1/admin/whoami")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body == {
        "principal": f"{t}/alice@assistant", "tenant_id": t, "user_id": "alice", "agent_id": "assistant", "workspace_id": "alpha",
        "department_ids": ["eng"], "roles": ["approver"],
        "readable_scopes": [f"{t}/user/alice", f"{t}/agent/assistant/alice", f"{t}/ws/alpha", f"{t}/dept/eng", f"{t}/tenant", "global"],
        "memory_backend": "local",
    }
    assert key not in r.text
    assert_problem(service.client().get("/api/v1/admin/whoami"), 401)
