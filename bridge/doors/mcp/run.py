"""`viking-bridge mcp [--transport stdio|http]`: open the bridge from settings, serve MCP, close it.

The bridge is the one the library and the service open from the same `VIKING_BRIDGE_*`
settings (`bridge.facade.open_bridge`: the local store under HOME, or shared state and memories
on PostgreSQL); its open checks run before the first tool call. stdio writes nothing but MCP
messages to stdout (logs go to stderr). Configuration errors are one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Sequence

from bridge.errors import VikingBridgeError

__all__ = ["main"]

EXIT_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="viking-bridge mcp", description="Serve the memory bridge as an MCP server (tools: remember, recall, forget, inject_context, write_back, list_memories).")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help=f"stdio (identity from the API key in VIKING_BRIDGE_API_KEY) or streamable HTTP (bearer JWT per request)")
    p.add_argument("--host", help="http: bind address (default VIKING_BRIDGE_MCP_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, help="http: port (default VIKING_BRIDGE_MCP_PORT or 8090)")
    return p


async def _serve_stdio() -> None:
    from bridge.facade import open_bridge
    from bridge.doors.mcp.credentials import stdio_identity
    from bridge.doors.mcp.server import build_server, fixed_identity
    from bridge.assembly.settings import load_bridge_settings
    from identity.settings import load_settings
    from mcp.server.stdio import stdio_server

    identity_settings, settings = load_settings(), load_bridge_settings()  # every setting checked before anything is opened
    bridge = open_bridge(settings)
    try:
        await bridge.aopen()
        shared = bridge.state if settings.state_url is not None else None
        identity = await stdio_identity(identity_settings, settings, shared_state=shared)
        server = build_server(bridge, fixed_identity(identity))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await bridge.aclose()


async def _serve_http(host: str | None, port: int | None) -> None:
    import uvicorn

    from bridge.facade import open_bridge
    from bridge.doors.mcp.credentials import jwt_verifier
    from bridge.doors.mcp.http import http_app, load_mcp_http_settings
    from bridge.doors.edge import LOG_CONFIG
    from bridge.doors.connection import BodyDeadline, uvicorn_options
    from bridge.assembly.settings import load_bridge_settings
    from identity.settings import load_settings

    overrides = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    mcp_settings = load_mcp_http_settings(**overrides)
    identity_settings = load_settings()
    settings = load_bridge_settings()
    bridge = open_bridge(settings)
    try:
        await bridge.aopen()
        shared = bridge.state if settings.state_url is not None else None
        verifier = jwt_verifier(identity_settings, settings, shared_state=shared)
        issuers = identity_settings.jwt.issuer if identity_settings.jwt else ()
        app = http_app(bridge, verifier, mcp_settings, issuers)
        # the service's read limits (bridge/doors/connection.py) hold on this door too
        config = uvicorn.Config(BodyDeadline(app), host=mcp_settings.host, port=mcp_settings.port, log_config=LOG_CONFIG, access_log=False,
                                server_header=False, **uvicorn_options())
        await uvicorn.Server(config).serve()
    finally:
        await bridge.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_serve_stdio() if args.transport == "stdio" else _serve_http(args.host, args.port))
    except VikingBridgeError as exc:
        print(f"viking-bridge mcp: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        pass
    return 0
