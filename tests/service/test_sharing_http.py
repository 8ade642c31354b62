"""Multi-agent sharing and teams over HTTP (a real service process): team membership by a tenant admin, team writes
refused for non-members (403 problem+json), `visible_to` on a write and in recall results,
narrowing through PUT .../visible-to, and task isolation from a signed gateway header."""

from __future__ import annotations

import json
import uuid

import httpx

from tests.service.servicekit import Service, assert_problem

TEAM_TEXT = "Pilgrim team decision: cross the Flaming Mountain only with the palm-leaf fan"
SECRET = "Wukong's scouting note: the cave entrance is behind the waterfall"


def _tenant() -> str:
    return "t" + uuid.uuid4().hex[:10]  # the service is shared by the session: a tenant per test


def _memories(response: httpx.Response) -> dict[str, dict]:
    assert response.status_code == 200, response.text
    return {m["memory_id"]: m for m in response.json()["memories"]}


def test_team_memory_is_written_and_read_by_members_only_over_http(service: Service) -> None:
    t = _tenant()
    admin = service.client(service.api_key("root", tenant=t, roles=["admin"]))
    wukong = service.client(service.api_key("alice", tenant=t, agent="wukong"))
    bajie = service.client(service.api_key("bob", tenant=t, agent="bajie"))
    tangseng = service.client(service.api_key("alice", tenant=t, agent="tangseng"))

    assert_problem(wukong.put("/api/v1/teams/pilgrims", json={"agent_ids": ["wukong"]}), 403)  # only an admin
    team = admin.put("/api/v1/teams/pilgrims", json={"agent_ids": ["wukong", "bajie"]})
    assert team.status_code == 200 and team.json() == {"team_id": "pilgrims", "members": ["bajie", "wukong"]}, team.text

    stored = wukong.post("/api/v1/memories", json={"content": TEAM_TEXT, "kind": "decision", "memory_type": "team", "team_id": "pilgrims"})
    assert stored.status_code == 201, stored.text
    assert stored.json()["scope"] == f"{t}/team/pilgrims" and stored.json()["memory_type"] == "team" and stored.json()["visible_to"] == ["*"]
    assert_problem(tangseng.post("/api/v1/memories", json={"content": "rewrite", "kind": "decision", "memory_type": "team", "team_id": "pilgrims"}), 403)
    assert_problem(tangseng.post("/api/v1/capture", json={"content": "I prefer the river route", "team_id": "pilgrims"}), 403)

    mid = stored.json()["memory_id"]
    seen = _memories(bajie.post("/api/v1/recall", json={"query": TEAM_TEXT, "budget_tokens": 20000}))
    assert seen[mid]["memory_type"] == "team" and seen[mid]["visible_to"] == ["*"], seen
    assert mid not in _memories(tangseng.post("/api/v1/recall", json={"query": TEAM_TEXT, "budget_tokens": 20000}))

    removed = admin.delete("/api/v1/teams/pilgrims/members/bajie")
    assert removed.json()["members"] == ["wukong"], removed.text
    assert mid not in _memories(bajie.get("/api/v1/recall", params={"query": TEAM_TEXT}))


def test_visible_to_narrows_at_once_and_only_the_owner_changes_it_over_http(service: Service) -> None:
    t = _tenant()
    wukong = service.client(service.api_key("alice", tenant=t, agent="wukong"))
    bajie = service.client(service.api_key("alice", tenant=t, agent="bajie"))
    stored = wukong.post("/api/v1/memories", json={"content": SECRET, "kind": "note", "memory_type": "private", "visible_to": ["bajie"]})
    assert stored.status_code == 201, stored.text
    body = stored.json()
    assert body["scope"] == f"{t}/agent/wukong/alice" and body["visible_to"] == ["wukong", "bajie"], body
    assert body["memory_id"] in _memories(bajie.post("/api/v1/recall", json={"query": SECRET, "budget_tokens": 20000}))

    params = {"scope": body["scope"]}
    assert_problem(bajie.put(f"/api/v1/memories/{body['memory_id']}/visible-to", params=params, json={"visible_to": ["*"]}), 403)
    narrowed = wukong.put(f"/api/v1/memories/{body['memory_id']}/visible-to", params=params, json={"visible_to": ["wukong"]})
    assert narrowed.status_code == 200 and narrowed.json()["visible_to"] == ["wukong"], narrowed.text
    assert body["memory_id"] not in _memories(bajie.post("/api/v1/recall", json={"query": SECRET, "budget_tokens": 20000}))

    for bad in ({"memory_type": "injected"}, {"visible_to": []}, {"visible_to": ["*", "bajie"]}, {"visible_to": ["a/b"]}):
        r = wukong.post("/api/v1/memories", json={"content": "x", "kind": "note", **bad})
        assert r.status_code in (400, 422), (bad, r.status_code, r.text)


def test_a_task_header_isolates_working_memory_over_http(service: Service) -> None:
    t = _tenant()
    path = "/api/v1/memories"

    def post_in(task: str | None, payload: dict) -> httpx.Response:
        raw = json.dumps(payload).encode()
        extra = {"task_id": task} if task else {}
        headers = service.gateway_headers("POST", path, raw, user="alice", tenant=t, agent="coder", nonce=uuid.uuid4().hex, **extra)
        return httpx.post(service.url + path, content=raw, headers={"content-type": "application/json", **headers}, timeout=30)

    def recall_in(task: str | None, query: str) -> dict[str, dict]:
        raw = json.dumps({"query": query, "budget_tokens": 20000}).encode()
        extra = {"task_id": task} if task else {}
        headers = service.gateway_headers("POST", "/api/v1/recall", raw, user="alice", tenant=t, agent="coder", nonce=uuid.uuid4().hex, **extra)
        return _memories(httpx.post(service.url + "/api/v1/recall", content=raw, headers={"content-type": "application/json", **headers}, timeout=30))

    text = "Working note for the river task: the raft needs four more bamboo poles"
    stored = post_in("river", {"content": text, "kind": "procedure"})
    assert stored.status_code == 201, stored.text
    assert stored.json()["scope"] == f"{t}/task/coder/alice/river", stored.json()
    mid = stored.json()["memory_id"]
    assert mid in recall_in("river", text)
    assert mid not in recall_in("mountain", text)
    assert mid not in recall_in(None, text)
