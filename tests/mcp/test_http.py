"""The MCP server over streamable HTTP: one real `viking-bridge mcp --transport http` process on
loopback per session (conftest.py), bearer JWTs verified per request, the MCP authorization
spec's protected-resource metadata. Driven with the MCP SDK's own client, configured from
examples/mcp/http.mcp.json (the README's host config)."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.mcp.mcpkit import load_host_config
from tests.service.servicekit import AUDIENCE, ISSUER, Service


async def call(service: Service, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    entry = load_host_config("http.mcp.json", VIKING_BRIDGE_MCP_URL=service.url + "/mcp", VIKING_BRIDGE_TOKEN=token)
    assert entry["type"] == "http"
    async with create_mcp_http_client(headers=entry["headers"]) as http:
        async with Client(streamable_http_client(entry["url"], http_client=http)) as client:
            return [await client.call_tool(name, args) for name, args in calls]


def _user(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"  # one session-wide server: every test its own users


def test_request_without_a_token_is_401_naming_the_protected_resource_metadata(mcp_http: Service) -> None:
    r = httpx.post(mcp_http.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401, r.text
    challenge = r.headers["www-authenticate"]
    match = re.search(r'resource_metadata="([^"]+)"', challenge)
    assert challenge.startswith("Bearer ") and match, challenge
    assert match.group(1) == mcp_http.url + "/.well-known/oauth-protected-resource/mcp"
    meta = httpx.get(match.group(1)).json()
    assert meta["resource"] == mcp_http.url + "/mcp"
    assert meta["authorization_servers"] == [ISSUER]
    assert "header" in meta.get("bearer_methods_supported", ["header"])


def test_token_from_another_issuer_key_or_audience_is_401(mcp_http: Service) -> None:
    now = int(time.time())
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "tid": "acme", "azp": "assistant", "iat": now, "exp": now + 300}
    forged = [
        jwt.encode(claims, stranger, algorithm="RS256"),                              # right claims, wrong key
        jwt.encode({**claims, "aud": "someone-else"}, mcp_http.jwt_key, algorithm="RS256"),  # right key, wrong audience
        jwt.encode({**claims, "exp": now - 600}, mcp_http.jwt_key, algorithm="RS256"),       # expired
        "not-a-jwt",
    ]
    for token in forged:
        r = httpx.post(mcp_http.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"})
        assert r.status_code == 401, (token[:20], r.status_code, r.text[:300])
        assert "resource_metadata=" in r.headers["www-authenticate"]


async def test_user_b_cannot_read_user_a_private_memory_over_http(mcp_http: Service) -> None:
    alice, bob = _user("alice"), _user("bob")
    [stored] = await call(mcp_http, mcp_http.token(alice), ("remember", {"content": f"{alice} private profile: passport number X1234567", "kind": "profile"}))
    assert not stored.is_error, stored.content
    ref = stored.structured_content
    recall, listing, forget = await call(
        mcp_http, mcp_http.token(bob),
        ("recall", {"query": "passport number", "budget_tokens": 4000}),
        ("list_memories", {"scope": ref["scope"]}),
        ("forget", {"scope": ref["scope"], "memory_id": ref["memory_id"]}),
    )
    assert not recall.is_error, recall.content
    assert ref["memory_id"] not in {m["memory_id"] for m in recall.structured_content["memories"]}
    assert "X1234567" not in recall.structured_content["context"]
    assert listing.is_error and listing.structured_content["error"] == "NotPermitted"
    assert forget.is_error or forget.structured_content == {"deleted": False}
    [mine] = await call(mcp_http, mcp_http.token(alice), ("recall", {"query": "passport number", "budget_tokens": 4000}))
    assert ref["memory_id"] in {m["memory_id"] for m in mine.structured_content["memories"]}  # positive control


async def test_tool_call_naming_another_user_is_refused_over_http(mcp_http: Service) -> None:
    alice, bob = _user("alice"), _user("bob")
    [stored] = await call(mcp_http, mcp_http.token(alice), ("remember", {"content": f"{alice} prefers oolong", "kind": "preference"}))
    refused = await call(
        mcp_http, mcp_http.token(bob),
        ("recall", {"query": "oolong", "user_id": alice}),
        ("list_memories", {"scope": stored.structured_content["scope"], "user_id": alice, "tenant_id": "acme"}),
        ("remember", {"content": "planted", "kind": "preference", "user_id": alice}),
    )
    for result in refused:
        assert result.is_error and result.structured_content["error"] == "InvalidInput", result.content
        assert "user_id" in result.structured_content["detail"]
    [mine] = await call(mcp_http, mcp_http.token(alice), ("list_memories", {}))
    assert [m["content"] for m in mine.structured_content["memories"]] == [f"{alice} prefers oolong"]


async def test_identity_is_the_tokens_on_every_request_and_labelled_in_the_context(mcp_http: Service) -> None:
    carol = _user("carol")
    stored, recalled = await call(mcp_http, mcp_http.token(carol, tenant="globex"),
                                  ("remember", {"content": "Carol decided: Postgres for project kite", "kind": "decision", "visibility": "private"}),
                                  ("recall", {"query": "Postgres project kite"}))
    assert stored.structured_content["scope"] == f"globex/user/{carol}"
    assert recalled.structured_content["identity"].startswith(f"globex/{carol}@")
    assert f"scope=globex/user/{carol}" in recalled.content[0].text and "visible: own private memory" in recalled.content[0].text


def test_another_identitys_token_cannot_continue_an_mcp_session(mcp_http: Service) -> None:
    """The SDK binds an Mcp-Session-Id to the principal of the token that opened it: bob presenting
    alice's session id is refused (and would run as bob anyway: identity is the token's, per request)."""
    alice, bob = _user("alice"), _user("bob")
    version = "2025-06-18"
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    as_alice = {**base, "Authorization": "Bearer " + mcp_http.token(alice)}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    opened = httpx.post(mcp_http.url + "/mcp", json=init, headers=as_alice)
    assert opened.status_code == 200, opened.text[:300]
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}
    httpx.post(mcp_http.url + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**as_alice, **session})
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_memories", "arguments": {}}}
    hijack = httpx.post(mcp_http.url + "/mcp", json=call, headers={**base, **session, "Authorization": "Bearer " + mcp_http.token(bob)})
    assert hijack.status_code in (403, 404), (hijack.status_code, hijack.text[:300])
    assert "memories" not in hijack.text
    own = httpx.post(mcp_http.url + "/mcp", json=call, headers={**as_alice, **session})
    assert own.status_code == 200 and '"isError":false' in own.text, own.text[:300]  # positive control: the session works for its owner


async def test_child_agent_reads_only_what_its_parent_injected_and_writes_back_over_http(mcp_http: Service) -> None:
    alice, bob = _user("alice"), _user("bob")
    parent, child = mcp_http.token(alice, agent="planner"), mcp_http.token(alice, agent="coder")
    stored, injected = await call(mcp_http, parent,
                                  ("remember", {"content": "Project kite deploys with blue-green releases", "kind": "fact", "visibility": "agent"}),
                                  ("inject_context", {"child_agent": "coder", "task": "how does project kite deploy", "depth": "standard"}))
    assert not injected.is_error, injected.content
    manifest = injected.structured_content
    assert stored.structured_content["memory_id"] in {m["memory_id"] for m in manifest["memories"]}
    [plain] = await call(mcp_http, child, ("recall", {"query": "kite deploy"}))
    assert stored.structured_content["memory_id"] not in {m["memory_id"] for m in plain.structured_content["memories"]}  # the planner's own memory
    seen, written = await call(mcp_http, child,
                               ("recall", {"query": "kite deploy", "manifest_id": manifest["manifest_id"]}),
                               ("write_back", {"manifest_id": manifest["manifest_id"], "content": "Kite: blue-green verified in staging", "kind": "fact"}))
    item = next(m for m in seen.structured_content["memories"] if m["memory_id"] == stored.structured_content["memory_id"])
    assert item["injected_by"], item  # labelled as injected, read-only for the child
    assert not written.is_error, written.content
    [stolen] = await call(mcp_http, mcp_http.token(bob, agent="coder"), ("recall", {"query": "kite deploy", "manifest_id": manifest["manifest_id"]}))
    assert stolen.is_error or stored.structured_content["memory_id"] not in {m["memory_id"] for m in stolen.structured_content["memories"]}
