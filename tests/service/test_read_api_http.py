"""The read API over HTTP: get, list with cursors, the approver's queue, edit in place, reject."""

from __future__ import annotations

import secrets

from tests.service.servicekit import Service, assert_problem


def test_list_walks_a_scope_with_cursors(service: Service) -> None:
    ws = "list-" + secrets.token_hex(4)
    c = service.client(service.api_key("list-u1", workspace=ws))
    ids = {c.post("/api/v1/memories", json={"content": f"fact number {n}", "kind": "fact"}).json()["memory_id"] for n in range(7)}
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        params = {"scope": f"acme/ws/{ws}", "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = c.get("/api/v1/memories", params=params).json()
        assert len(page["memories"]) <= 3
        seen += [m["memory_id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)


def test_approver_finds_and_handles_what_awaits_them(service: Service) -> None:
    dept = "dept" + secrets.token_hex(3)
    member = service.client(service.api_key("q-member", departments=[dept]))
    approver = service.client(service.api_key("q-approver", departments=[dept], roles=["approver"]))
    outsider = service.client(service.api_key("q-outsider", departments=["other"], roles=["approver"]))
    pending = [member.post("/api/v1/memories", json={"content": f"standard {n}: review every PR", "kind": "standard"}).json() for n in range(2)]
    assert all(p["status"] == "pending" for p in pending)
    queue = approver.get("/api/v1/approvals").json()
    queued = {m["memory_id"] for m in queue["memories"]}
    assert {p["memory_id"] for p in pending} <= queued
    assert not {p["memory_id"] for p in pending} & {m["memory_id"] for m in outsider.get("/api/v1/approvals").json()["memories"]}
    assert_problem(member.get("/api/v1/approvals"), 403)
    ok = approver.post(f"/api/v1/memories/{pending[0]['memory_id']}/approve", params={"scope": pending[0]["scope"]})
    assert ok.status_code == 200 and ok.json()["status"] == "active"
    gone = approver.post(f"/api/v1/memories/{pending[1]['memory_id']}/reject", params={"scope": pending[1]["scope"]})
    assert gone.status_code == 200 and gone.json()["deleted"] is True
    assert_problem(approver.get(f"/api/v1/memories/{pending[1]['memory_id']}", params={"scope": pending[1]["scope"]}), 404)
    assert any(e["action"] == "reject" for e in approver.get("/api/v1/audit", params={"action": "reject"}).json())


def test_edit_keeps_the_id_reembeds_and_is_audited(service: Service) -> None:
    c = service.client(service.api_key("edit-u1"))
    w = c.post("/api/v1/memories", json={"content": "my favourite fruit is the apple", "kind": "preference"}).json()
    r = c.patch(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}, json={"content": "my favourite vehicle is the bicycle", "metadata": {"source": "correction"}})
    assert r.status_code == 200, r.text
    assert r.json()["memory_id"] == w["memory_id"] and r.json()["metadata"] == {"source": "correction"}
    hits = c.get("/api/v1/recall", params={"query": "bicycle vehicle"}).json()["memories"]
    assert hits and hits[0]["memory_id"] == w["memory_id"] and "bicycle" in hits[0]["content"]  # re-embedded
    rows = c.get("/api/v1/audit", params={"action": "edit", "memory_id": w["memory_id"]}).json()
    assert rows and rows[0]["detail"]["fields"] == ["content", "metadata"]
    assert "bicycle" not in str(rows)  # the audit names fields, never content
    other = service.client(service.api_key("edit-u2"))
    assert_problem(other.patch(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}, json={"content": "hijacked"}), 403)
    assert_problem(c.patch(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}, json={"metadata": {"vb.promoted_from": "x"}}), 400)
