"""The MCP server over stdio: a real `viking-bridge mcp` child process per connection, started
exactly as examples/mcp/stdio.mcp.json (the README's host config) says, identity from the API
key in its environment. Driven with the MCP SDK's own client."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from bridge.state.records import AuditView
from bridge.state.sqlite import SqliteState
from identity.providers.api_keys import ApiKeyStore
from tests.mcp.mcpkit import CONSOLE_SCRIPT, ROOT, base_env, load_host_config, stdio_params

IDENTITY_ARGUMENTS = {"user_id", "user", "tenant_id", "tenant", "agent_id", "agent", "roles", "department_ids", "workspace_id", "session_id", "identity"}


class Deployment:
    def __init__(self, tmp: Path) -> None:
        self.home, self.db = tmp / "home", tmp / "keys.sqlite3"
        self.keys = ApiKeyStore(self.db)
        self._issued: dict[str, str] = {}

    def key(self, user: str, **kw: Any) -> str:
        if user not in self._issued:
            self._issued[user] = self.keys.issue(tenant_id="acme", user_id=user, agent_id="assistant", label="mcp-tests", **kw).key
        return self._issued[user]

    def params(self, user: str) -> Any:
        entry = load_host_config("stdio.mcp.json", VIKING_BRIDGE_HOME=str(self.home), VIKING_BRIDGE_API_KEYS__DB_PATH=str(self.db), VIKING_BRIDGE_API_KEY=self.key(user))
        return stdio_params(entry)

    async def call(self, user: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        """Each call in one connection to one server process running as `user`'s key."""
        async with Client(self.params(user)) as client:
            return [await client.call_tool(name, args) for name, args in calls]


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    d = Deployment(tmp_path)
    yield d
    d.keys.close()


async def test_every_tool_has_a_strict_schema_and_no_identity_argument(deployment: Deployment) -> None:
    async with Client(deployment.params("alice")) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == {"remember", "recall", "forget", "inject_context", "write_back", "list_memories"}
    for tool in tools:
        schema = tool.input_schema
        assert schema.get("additionalProperties") is False, tool.name
        assert not IDENTITY_ARGUMENTS & set(schema.get("properties", {})), (tool.name, sorted(schema["properties"]))
        assert "never a parameter" in (tool.description or ""), tool.name


async def test_user_b_cannot_read_user_a_private_memory_over_stdio(deployment: Deployment) -> None:
    [stored] = await deployment.call("alice", ("remember", {"content": "Alice private profile: blood type AB, lives at 7 Birch Lane", "kind": "profile"}))
    assert not stored.is_error, stored.content
    alice_id, alice_scope = stored.structured_content["memory_id"], stored.structured_content["scope"]

    recall, listing, forget = await deployment.call(
        "bob",
        ("recall", {"query": "blood type and home address", "budget_tokens": 4000}),
        ("list_memories", {"scope": alice_scope}),
        ("forget", {"scope": alice_scope, "memory_id": alice_id}),
    )
    assert not recall.is_error
    assert alice_id not in {m["memory_id"] for m in recall.structured_content["memories"]}
    assert "Birch Lane" not in recall.structured_content["context"] and "Birch Lane" not in recall.content[0].text
    assert listing.is_error and listing.structured_content["error"] == "NotPermitted", listing.content
    assert forget.is_error or forget.structured_content == {"deleted": False}, forget.content

    [again] = await deployment.call("alice", ("recall", {"query": "blood type and home address", "budget_tokens": 4000}))
    assert alice_id in {m["memory_id"] for m in again.structured_content["memories"]}  # positive control: it exists, bob's forget did nothing
    assert "own private memory" in again.content[0].text  # the rendered context says why it is visible


async def test_tool_call_naming_another_user_is_refused_over_stdio(deployment: Deployment) -> None:
    [stored] = await deployment.call("alice", ("remember", {"content": "Alice prefers green tea at 10:00", "kind": "preference"}))
    alice_id = stored.structured_content["memory_id"]
    forged = [
        ("recall", {"query": "green tea", "user_id": "alice"}),
        ("recall", {"query": "green tea", "tenant_id": "acme", "agent_id": "assistant", "roles": ["admin"]}),
        ("list_memories", {"scope": stored.structured_content["scope"], "user_id": "alice"}),
        ("remember", {"content": "Bob writes as alice", "kind": "preference", "user_id": "alice"}),
        ("forget", {"scope": stored.structured_content["scope"], "memory_id": alice_id, "user": "alice"}),
    ]
    results = await deployment.call("bob", *forged)
    for (name, args), result in zip(forged, results):
        assert result.is_error, (name, args, result.content)
        assert result.structured_content["error"] == "InvalidInput", result.structured_content
        assert "Extra inputs are not permitted" in result.structured_content["detail"] and "never a parameter" in result.structured_content["detail"]
    [mine] = await deployment.call("alice", ("list_memories", {}))
    contents = [m["content"] for m in mine.structured_content["memories"]]
    assert contents == ["Alice prefers green tea at 10:00"], contents  # nothing was written into alice's scope, nothing forgotten
    state = SqliteState(deployment.home / "bridge.sqlite3")
    try:  # every attempt is on record as bob's refusal, like a refusal of the policy
        denied = await state.audit.query(AuditView("acme", "bob"), action="denied")
    finally:
        state.close()
    assert sorted(e.detail["operation"] for e in denied) == sorted(f"mcp:{name}" for name, _ in forged)


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CONSOLE_SCRIPT, "mcp"], env={**base_env(), **env}, cwd=ROOT, input="", capture_output=True, text=True, timeout=60)


def test_stdio_server_without_its_key_refuses_to_start_instead_of_serving_a_default_identity(tmp_path: Path) -> None:
    env = {"VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_PROVIDER": "api_key", "VIKING_BRIDGE_API_KEYS__DB_PATH": str(tmp_path / "keys.sqlite3")}
    run = _start(env)
    assert run.returncode == 2 and "VIKING_BRIDGE_API_KEY" in run.stderr, (run.returncode, run.stderr[-2000:])
    assert run.stdout == ""  # not one MCP message was served


def test_stdio_server_with_a_forged_key_refuses_to_start(tmp_path: Path) -> None:
    keys = ApiKeyStore(tmp_path / "keys.sqlite3")
    real = keys.issue(tenant_id="acme", user_id="alice", agent_id="assistant", label="mcp-tests").key
    keys.close()
    forged = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    run = _start({"VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_PROVIDER": "api_key",
                  "VIKING_BRIDGE_API_KEYS__DB_PATH": str(tmp_path / "keys.sqlite3"), "VIKING_BRIDGE_API_KEY": forged})
    assert run.returncode == 2 and "error" in run.stderr, (run.returncode, run.stderr[-2000:])
    assert run.stdout == ""


def test_stdio_server_in_production_mode_never_serves_the_development_identity(tmp_path: Path) -> None:
    run = _start({"VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_MODE": "production"})
    assert run.returncode == 2 and run.stdout == "", (run.returncode, run.stderr[-2000:])


async def test_stdio_server_in_development_mode_serves_only_the_configured_development_identity(tmp_path: Path) -> None:
    """No key and no provider configured (a laptop): the development identity from the
    environment, never one a tool argument names."""
    from mcp.client.stdio import StdioServerParameters

    env = {**base_env(), "VIKING_BRIDGE_HOME": str(tmp_path / "home"), "VIKING_BRIDGE_USER_ID": "dana", "VIKING_BRIDGE_TENANT_ID": "local"}
    async with Client(StdioServerParameters(command=CONSOLE_SCRIPT, args=["mcp"], env=env, cwd=str(ROOT))) as client:
        stored = await client.call_tool("remember", {"content": "Dana prefers vim", "kind": "preference"})
        forged = await client.call_tool("recall", {"query": "vim", "user_id": "root"})
    assert stored.structured_content["scope"] == "local/user/dana", stored.structured_content
    assert forged.is_error and forged.structured_content["error"] == "InvalidInput"


async def test_agent_not_named_in_visible_to_cannot_read_a_memory_shared_over_stdio(deployment: Deployment) -> None:
    """The remember tool carries seed 000's sharing and expiry fields to the policy: a private note
    shared with [wukong, bajie] reaches bajie (one-scope recall too, `only_scopes`), never tangseng
    of the same user, whose `only_scopes` naming it is refused; `ttl_s` comes back as an expiry,
    and a string TTL is refused rather than coerced."""
    def key(agent: str) -> str:
        return deployment.keys.issue(tenant_id="acme", user_id="alice", agent_id=agent, label="mcp-sharing").key

    def params(agent: str) -> Any:
        entry = load_host_config("stdio.mcp.json", VIKING_BRIDGE_HOME=str(deployment.home), VIKING_BRIDGE_API_KEYS__DB_PATH=str(deployment.db),
                                 VIKING_BRIDGE_API_KEY=key(agent))
        return stdio_params(entry)

    note = "Wukong's scouting note: the cave entrance is behind the waterfall on the east ridge"
    async with Client(params("wukong")) as client:
        shared = await client.call_tool("remember", {"content": note, "kind": "note", "memory_type": "private", "visible_to": ["wukong", "bajie"], "ttl_s": 3600})
        bad = await client.call_tool("remember", {"content": note, "kind": "note", "ttl_s": "60"})
    assert not shared.is_error, shared.content
    body = shared.structured_content
    assert body["scope"] == "acme/agent/wukong/alice" and sorted(body["visible_to"]) == ["bajie", "wukong"] and body["expires_at"] is not None, body
    assert bad.is_error and bad.structured_content["error"] == "InvalidInput", bad.content  # a string is not a TTL: refused, not coerced
    async with Client(params("bajie")) as client:
        seen = await client.call_tool("recall", {"query": "cave entrance waterfall", "budget_tokens": 4000})
        narrowed = await client.call_tool("recall", {"query": "cave entrance waterfall", "budget_tokens": 4000, "only_scopes": [body["scope"]]})
    assert body["memory_id"] in {m["memory_id"] for m in seen.structured_content["memories"]}, seen.structured_content
    assert not narrowed.is_error and narrowed.structured_content["scopes_searched"] == [body["scope"]], narrowed.structured_content
    assert [m["memory_id"] for m in narrowed.structured_content["memories"]] == [body["memory_id"]]
    async with Client(params("tangseng")) as client:
        other = await client.call_tool("recall", {"query": "cave entrance waterfall", "budget_tokens": 4000})
        forced = await client.call_tool("recall", {"query": "cave entrance waterfall", "only_scopes": [body["scope"]]})
    assert body["memory_id"] not in {m["memory_id"] for m in other.structured_content["memories"]} and "waterfall" not in other.content[0].text
    assert forced.is_error and forced.structured_content["error"] == "NotPermitted", forced.structured_content  # only_scopes never widens
