"""Every memory is reachable without knowing its scope: "all my memories", "this id", and a
memory's edit history — never wider than the caller's default scopes (404 like a missing id)."""

from __future__ import annotations

import secrets

from tests.service.servicekit import Service, assert_problem


def test_all_my_memories_walks_every_default_scope_in_pages(service: Service) -> None:
    ws = "all-" + secrets.token_hex(4)
    me = service.client(service.api_key("all-u1-" + ws, workspace=ws))
    mine = {me.post("/api/v1/memories", json={"content": f"private note {n}", "kind": "note", "visibility": "private"}).json()["memory_id"] for n in range(3)}
    mine |= {me.post("/api/v1/memories", json={"content": f"workspace fact {n}", "kind": "fact", "visibility": "workspace"}).json()["memory_id"] for n in range(3)}
    stranger = service.client(service.api_key("all-u2-" + ws, workspace="elsewhere-" + ws))
    theirs = stranger.post("/api/v1/memories", json={"content": "not yours", "kind": "note", "visibility": "private"}).json()["memory_id"]
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        r = me.get("/api/v1/memories", params={"limit": 2, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["memories"]) <= 2
        seen += [m["memory_id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert mine <= set(seen) and theirs not in seen
    assert len(seen) == len(set(seen))  # no page repeats another
    assert_problem(me.get("/api/v1/memories", params={"cursor": "acme/private/someone-else#"}), 400)


def test_this_id_is_found_only_where_the_caller_may_read(service: Service) -> None:
    tag = secrets.token_hex(4)
    me = service.client(service.api_key("id-u1-" + tag))
    w = me.post("/api/v1/memories", json={"content": "my bike is blue", "kind": "fact", "visibility": "private"}).json()
    r = me.get(f"/api/v1/memories/{w['memory_id']}")
    assert r.status_code == 200, r.text
    assert r.json()["scope"] == w["scope"] and r.json()["content"] == "my bike is blue"
    other = service.client(service.api_key("id-u2-" + tag))
    hidden = assert_problem(other.get(f"/api/v1/memories/{w['memory_id']}"), 404)
    missing = assert_problem(other.get("/api/v1/memories/no-such-memory-" + tag), 404)
    # the same answer whether it exists elsewhere or nowhere: nothing tells the two apart
    assert hidden["detail"].replace(w["memory_id"], "ID") == missing["detail"].replace("no-such-memory-" + tag, "ID")


def test_edit_history_says_who_changed_what_when(service: Service) -> None:
    tag = secrets.token_hex(4)
    me = service.client(service.api_key("hist-u1-" + tag))
    w = me.post("/api/v1/memories", json={"content": "I drink tea", "kind": "preference", "visibility": "private"}).json()
    assert me.patch(f"/api/v1/memories/{w['memory_id']}", params={"scope": w["scope"]}, json={"content": "I drink coffee"}).status_code == 200
    me.get(f"/api/v1/memories/{w['memory_id']}")  # a read is not a change
    r = me.get(f"/api/v1/memories/{w['memory_id']}/history")
    assert r.status_code == 200, r.text
    h = r.json()
    assert h["memory_id"] == w["memory_id"] and h["scope"] == w["scope"]
    actions = [c["action"] for c in h["changes"]]
    assert actions[0] == "edit" and "recall" not in actions and len(actions) == 2
    assert h["changes"][0]["detail"] == {"fields": ["content"]} and f"hist-u1-{tag}" in h["changes"][0]["actor"]
    assert h["changes"][0]["ts"] >= h["changes"][1]["ts"]
    assert "coffee" not in r.text and "tea" not in r.text  # the history names fields, never content
    assert me.get(f"/api/v1/memories/{w['memory_id']}/history", params={"scope": w["scope"]}).json() == h
    other = service.client(service.api_key("hist-u2-" + tag))
    assert_problem(other.get(f"/api/v1/memories/{w['memory_id']}/history"), 404)
