"""`build_server(bridge, identify)`: the MCP server (the SDK's low-level `Server`) over a bridge.

Why the low-level server and not `MCPServer` (FastMCP): MCPServer derives each tool's schema
from a function signature and validates calls with a model that ignores unknown arguments, so a
model passing `user_id="bob"` would be silently dropped — a door where the caller believes it
chose an identity. Here every tool's schema and validator is one strict pydantic model
(`tools.py`, `additionalProperties: false`), and the call handler is ours: validate -> identity
from `identify(ctx)` (the transport's verified credential) -> one operation through
`MemoryBridge.execute`, so policy, session binding, limits and the refusal audit are the same as
every other door's.

Errors of the bridge's tree come back as a tool error (`isError`) whose structured content names
the error class, so a model sees "NotPermitted: ..." and a client can map it back; anything else
is "internal error" with no detail (logged by class only). This module never reads identity from
a tool argument.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Awaitable, Callable

import mcp_types as types
from pydantic import ValidationError

from bridge.errors import InvalidInput, QuotaExceeded, Unauthenticated, VikingBridgeError
from bridge.facade import MemoryBridge
from bridge.doors.mcp.credentials import IdentifiedAccessToken
from bridge.doors.mcp.tools import IDENTITY_NOTE, TOOLS
from identity.model import MemoryIdentity
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

__all__ = ["build_server", "fixed_identity", "request_identity", "Identify", "SERVER_NAME"]

log = logging.getLogger("viking_bridge.mcp")
SERVER_NAME = "viking-bridge"
Identify = Callable[[ServerRequestContext[Any]], Awaitable[MemoryIdentity]]
INSTRUCTIONS = (
    "Permission-first memory: recall before answering, remember durable facts and preferences, forget on request. "
    "Every recalled memory is labelled with where it came from and why you may see it. " + IDENTITY_NOTE
)


def _error(name: str, detail: str, exc: BaseException | None = None) -> types.CallToolResult:
    body: dict[str, Any] = {"error": name, "detail": detail}
    if getattr(exc, "failed_scopes", None):  # RecallIncomplete: which scopes could not be searched
        body["failed_scopes"] = [str(s) for s in exc.failed_scopes]  # type: ignore[union-attr]
    if isinstance(exc, QuotaExceeded):  # which quota, as the service's problem+json says it
        body.update(level=exc.level, measure=exc.measure, used=exc.used, requested=exc.requested, limit=exc.limit)
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{name}: {detail}")], structured_content=body, is_error=True)


def _tool_list() -> list[types.Tool]:
    return [
        types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema(),
                   annotations=types.ToolAnnotations(title=t.title, read_only_hint=t.read_only, destructive_hint=t.destructive, open_world_hint=False))
        for t in TOOLS.values()
    ]


def build_server(bridge: MemoryBridge, identify: Identify) -> Server[Any]:
    """An MCP server whose every tool call runs as `await identify(ctx)` — never as an argument says."""
    tool_list = _tool_list()

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:  # the spec: an unknown tool is a protocol error (invalid params), not a tool result
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name!r}; tools: {', '.join(TOOLS)}")
        try:
            args = tool.args.model_validate(params.arguments or {})
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()[:10])
            if not any(e["type"] == "extra_forbidden" for e in exc.errors()):
                return _error("InvalidInput", detail)
            refused = InvalidInput(detail + ". " + IDENTITY_NOTE)
            try:  # an argument trying to name someone: on record as a refusal, like the policy's
                await bridge.audit_refusal(await identify(ctx), f"mcp:{tool.name}", refused)
            except VikingBridgeError:
                pass  # no verifiable caller: the refusal stands unaudited, as a 401 would
            return _error("InvalidInput", str(refused))
        try:
            who = await identify(ctx)
            body = await tool.run(bridge, who, args)
        except VikingBridgeError as exc:
            return _error(type(exc).__name__, str(exc), exc)
        except Exception as exc:  # noqa: BLE001 - a tool call answers every failure; details stay in the log
            log.error("mcp: unhandled %s in tool %s", type(exc).__name__, tool.name)
            return _error("InternalError", "internal error")
        text = body.get("context") if tool.name == "recall" else None
        content = [types.TextContent(type="text", text=text if text is not None else json.dumps(body, ensure_ascii=False))]
        return types.CallToolResult(content=content, structured_content=body)

    return Server(SERVER_NAME, version="1", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


def fixed_identity(identity: MemoryIdentity) -> Identify:
    """stdio (and in-process) connections: one identity, verified once from the process's credential."""

    async def identify(ctx: ServerRequestContext[Any]) -> MemoryIdentity:
        if ctx.request is not None:  # an HTTP request reached a stdio server: refuse, never run as the process
            raise Unauthenticated("this MCP server authenticates per process, not per HTTP request")
        return identity

    return identify


async def request_identity(ctx: ServerRequestContext[Any]) -> MemoryIdentity:
    """streamable HTTP: the identity the JWT provider verified from this request's bearer token."""
    scope = getattr(ctx.request, "scope", None) or {}
    token = getattr(scope.get("user"), "access_token", None)
    if not isinstance(token, IdentifiedAccessToken):
        raise Unauthenticated("no verified bearer token on this request")
    return token.identity
