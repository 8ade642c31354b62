"""Seed 000's own calls (sections 3.3, 4.1, 4.3, 5.2), sent as written to a real `serve`
process, and seed 003's write rules through `capture`, in English and Chinese.

Each agent has its own API key; a tenant admin has put the team's agents in one team."""

from __future__ import annotations

import uuid

import httpx

from tests.service.servicekit import Service, assert_problem

TEAM = "hawk-bridge-backend"


def _tenant() -> str:
    return "t" + uuid.uuid4().hex[:10]  # the service is shared by the session: a tenant per test


def _ids(response: httpx.Response) -> dict[str, dict]:
    assert response.status_code == 200, response.text
    return {m["memory_id"]: m for m in response.json()["memories"]}


def _agents(service: Service, t: str, *names: str, workspace: str | None = None, departments: tuple[str, ...] = ()) -> dict[str, httpx.Client]:
    return {n: service.client(service.api_key("u-tang", tenant=t, agent=n, workspace=workspace, departments=departments)) for n in names}


def _team(service: Service, t: str, members: list[str]) -> None:
    admin = service.client(service.api_key("root", tenant=t, roles=["admin"]))
    assert admin.put(f"/api/v1/teams/{TEAM}", json={"agent_ids": members}).status_code == 200


def test_content_is_stored_whole_and_private_to_its_agent_by_default(service: Service) -> None:
    t = _tenant()
    a = _agents(service, t, "maomao", "wukong")
    for text in ("项目决定用 Next.js App Router", "maomao 的内部推理：我更喜欢先写测试",
                 "I prefer the Next.js App Router in every project", "just thinking out loud about v3.2.1"):
        r = a["maomao"].post("/api/v1/capture", json={"content": text, "agent_id": "maomao"})
        assert r.status_code == 200, r.text
        (w,) = r.json()["written"]  # a content matching no rule is still stored (as a note)
        assert r.json()["skipped"] == 0
        assert w["scope"] == f"{t}/agent/maomao/u-tang" and w["memory_type"] == "private" and w["visible_to"] == ["maomao"], w
        got = a["maomao"].get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]})
        assert got.status_code == 200 and got.json()["content"] == text, got.text  # whole, as given
        assert w["memory_id"] in _ids(a["maomao"].post("/api/v1/recall", json={"query": text, "budget_tokens": 20000}))
        assert w["memory_id"] not in _ids(a["wukong"].post("/api/v1/recall", json={"query": text, "budget_tokens": 20000}))


def test_seed000_5_2_member_team_capture_is_visible_at_once_and_a_non_member_is_403(service: Service) -> None:
    t = _tenant()
    a = _agents(service, t, "maomao", "bajie", "bailong")
    _team(service, t, ["maomao", "bajie"])
    r = a["maomao"].post("/api/v1/capture", json={
        "content": "架构决策：采用微前端",
        "memory_type": "team",
        "team_id": "hawk-bridge-backend",
        "agent_id": "maomao",
    })
    assert r.status_code == 200, r.text
    (w,) = r.json()["written"]
    assert w["scope"] == f"{t}/team/{TEAM}" and w["status"] == "active" and w["memory_type"] == "team" and w["visible_to"] == ["*"], w
    seen = _ids(a["bajie"].post("/api/v1/recall", json={"query": "架构决策：采用微前端", "budget_tokens": 20000}))
    assert seen[w["memory_id"]]["memory_type"] == "team"
    refused = a["bailong"].post("/api/v1/capture", json={
        "content": "架构决策：采用微前端", "memory_type": "team", "team_id": "hawk-bridge-backend", "agent_id": "bailong",
    })
    assert_problem(refused, 403)
    # without team_id: the agent's only team; no team at all is a clear refusal
    only = a["bajie"].post("/api/v1/capture", json={"content": "技术选型：Next.js App Router", "memory_type": "team"})
    assert only.status_code == 200 and only.json()["written"][0]["scope"] == f"{t}/team/{TEAM}", only.text
    none = assert_problem(a["bailong"].post("/api/v1/capture", json={"content": "技术选型：Vue", "memory_type": "team"}), 403)
    assert "no team" in str(none)


def test_seed000_3_3_team_capture_narrowed_by_visible_to_reaches_only_the_listed_agents(service: Service) -> None:
    """Seed 000 3.3, sent verbatim: team memory with an explicit visible_to is stored, labelled
    team with visible_to as given (plus its author), and recalled by wukong and bajie (GET, as
    the seed writes it, and POST) but not by shaseng, a member of the same team outside the list."""
    t = _tenant()
    a = _agents(service, t, "maomao", "wukong", "bajie", "shaseng")
    _team(service, t, ["maomao", "wukong", "bajie", "shaseng"])
    r = a["maomao"].post("/api/v1/capture", json={
        "content": "项目决定用 Next.js App Router",
        "memory_type": "team",
        "visible_to": ["wukong", "bajie"],
        "agent_id": "maomao",
    })
    assert r.status_code == 200, r.text
    (w,) = r.json()["written"]
    assert w["status"] == "active" and w["memory_type"] == "team" and sorted(w["visible_to"]) == ["bajie", "maomao", "wukong"], w
    for name in ("wukong", "bajie", "maomao"):
        got = a[name].get("/api/v1/recall", params={"query": "项目决定用 Next.js App Router", "agent_id": name})
        seen = _ids(got)
        assert w["memory_id"] in seen, (name, got.text)
        assert seen[w["memory_id"]]["memory_type"] == "team" and sorted(seen[w["memory_id"]]["visible_to"]) == ["bajie", "maomao", "wukong"]
        one = a[name].get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]})
        assert one.status_code == 200 and one.json()["content"] == "项目决定用 Next.js App Router", one.text
    outside = a["shaseng"]
    assert w["memory_id"] not in _ids(outside.get("/api/v1/recall", params={"query": "项目决定用 Next.js App Router", "agent_id": "shaseng"}))
    assert w["memory_id"] not in _ids(outside.post("/api/v1/recall", json={"query": "项目决定用 Next.js App Router", "budget_tokens": 20000}))
    assert outside.get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}).status_code in (403, 404)
    # narrowing never widens: an agent outside the team cannot be named
    assert_problem(a["maomao"].post("/api/v1/capture", json={
        "content": "项目决定用 Vite", "memory_type": "team", "visible_to": ["bailong"], "agent_id": "maomao",
    }), 400)


def test_seed000_4_1_and_4_3_the_main_agent_injects_and_a_child_cannot_inject_for_itself(service: Service) -> None:
    t = _tenant()
    a = _agents(service, t, "tangseng-brain", "wukong", workspace="hawk-bridge-backend")
    for text in ("项目上下文：hawk-bridge 是多 Agent 记忆服务", "技术选型：Next.js App Router", "wukong 的任务：实现登录接口"):
        assert a["tangseng-brain"].post("/api/v1/capture", json={"messages": [{"role": "user", "content": text}]}).status_code == 200
    r = a["tangseng-brain"].get("/api/v1/inject-context", params={"agent_id": "wukong", "task": "backend-dev"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["source"] == "injected_by_tangseng-brain" and body["memories"] and body["context"], body
    assert_problem(a["wukong"].get("/api/v1/inject-context", params={"agent_id": "wukong", "task": "backend-dev"}), 403)


def test_seed003_write_rules_hold_through_capture_in_english_and_chinese(service: Service) -> None:
    t = _tenant()
    a = _agents(service, t, "coder", workspace="alpha", departments=("eng",))
    conversation = [
        {"role": "user", "content": "I prefer the Next.js App Router in every project. We decided to use PostgreSQL 16 and Next.js 14 for the billing service. "
                                    "The coding standard is black with line length 100. Store this for user bob in the tenant scope, visibility=global."},
        {"role": "user", "content": "我更喜欢先写测试。我们决定用 Redis 7.2 做缓存。部门规范：所有接口必须有鉴权。"},
        {"role": "assistant", "content": "I prefer to remember everything."},
    ]
    r = a["coder"].post("/api/v1/capture", json={"messages": conversation})
    assert r.status_code == 200, r.text
    got = {}
    for w in r.json()["written"]:
        stored = a["coder"].get(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]})
        assert stored.status_code == 200, stored.text
        got[stored.json()["content"]] = (w["scope"], w["status"])
    assert got == {
        "I prefer the Next.js App Router in every project.": (f"{t}/user/u-tang", "active"),
        "We decided to use PostgreSQL 16 and Next.js 14 for the billing service.": (f"{t}/ws/alpha", "active"),
        "The coding standard is black with line length 100.": (f"{t}/dept/eng", "pending"),
        "我更喜欢先写测试。": (f"{t}/user/u-tang", "active"),
        "我们决定用 Redis 7.2 做缓存。": (f"{t}/ws/alpha", "active"),
        "部门规范：所有接口必须有鉴权。": (f"{t}/dept/eng", "pending"),
    }, got
    assert not any(scope.endswith("/tenant") or scope == "global" for scope, _ in got.values())
