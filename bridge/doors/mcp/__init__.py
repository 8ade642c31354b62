"""The MCP server door (`viking-bridge mcp`, docs/mcp.md).

    tools.py        one strict argument model per tool (no identity argument; unknown ones refused)
    server.py       build_server(bridge, identify): the SDK's low-level Server over MemoryBridge.execute
    credentials.py  identity from the process's API key (stdio) or each request's JWT (HTTP)
    http.py         streamable HTTP app: bearer auth, OAuth protected-resource metadata, /ready
    run.py          the command: open the bridge from settings, serve, close

Nothing here decides a permission (the policy does) or reads identity from a tool argument.
"""

from bridge.doors.mcp.server import build_server, fixed_identity, request_identity

__all__ = ["build_server", "fixed_identity", "request_identity"]
