"""An unknown tool name is a JSON-RPC protocol error (-32602, invalid params), as the MCP spec
says — not a tool result with `isError`, which a host would show the model as the tool's answer.
In-process (the SDK's client over the real server object), as the contract suite's MCP mode does."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from bridge.doors.mcp.server import build_server, fixed_identity
from bridge.facade import MemoryBridge
from tests.kit import make_identity


async def test_an_unknown_tool_is_invalid_params(tmp_path):
    bridge = MemoryBridge.open_local(tmp_path / "home")
    try:
        async with Client(build_server(bridge, fixed_identity(make_identity("alice")))) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("no_such_tool", {})
            assert caught.value.code == -32602 and "no_such_tool" in caught.value.message
            known = await client.call_tool("list_memories", {"scope": "acme/user/alice"})
            assert not known.is_error
    finally:
        await bridge.aclose()
