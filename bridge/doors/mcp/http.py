"""The MCP server over streamable HTTP: bearer JWTs per request, OAuth protected-resource metadata.

`http_app(bridge, verifier, settings)` is the SDK's streamable HTTP app with its resource-server
auth: every request to `/mcp` must carry a bearer token the bridge's JWT provider verifies
(`credentials.JwtTokenVerifier`); without one it is a 401 whose `WWW-Authenticate` names the
protected-resource metadata (`resource_metadata="<origin>/.well-known/oauth-protected-resource/mcp"`),
which names the authorization server (default: the first JWT issuer) — the MCP authorization spec's
discovery, so a host knows where to get a token. The SDK binds each `Mcp-Session-Id` to the
token's principal, so another identity's token cannot ride an MCP session; identity itself is
re-verified on every request. `GET /ready` answers once the bridge is open. DNS-rebinding protection is on for loopback binds.

    VIKING_BRIDGE_MCP_HOST                    127.0.0.1
    VIKING_BRIDGE_MCP_PORT                    8090
    VIKING_BRIDGE_MCP_RESOURCE_URL            http://<host>:<port>/mcp  (the public URL hosts use)
    VIKING_BRIDGE_MCP_AUTHORIZATION_SERVER    the first JWT issuer
    VIKING_BRIDGE_MCP_ALLOWED_HOSTS           extra Host values (e.g. behind a proxy), comma-separated

Never accepts a request without a verified token; never serves the development identity.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AnyHttpUrl, BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from bridge.errors import ConfigurationError
from bridge.facade import MemoryBridge
from bridge.doors.mcp.credentials import JwtTokenVerifier
from bridge.doors.mcp.server import build_server, request_identity
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["McpHttpSettings", "load_mcp_http_settings", "http_app", "MCP_PATH"]

MCP_PATH = "/mcp"


def _split(value: Any) -> Any:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if isinstance(value, str) else value


class McpHttpSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIKING_BRIDGE_MCP_", extra="ignore", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8090, ge=0, le=65535)
    resource_url: AnyHttpUrl | None = None
    authorization_server: AnyHttpUrl | None = None
    allowed_hosts: Annotated[tuple[str, ...], NoDecode, BeforeValidator(_split)] = ()

    def resource(self, port: int | None = None) -> str:
        return str(self.resource_url) if self.resource_url else f"http://{self.host}:{self.port if port is None else port}{MCP_PATH}"


def load_mcp_http_settings(**overrides: Any) -> McpHttpSettings:
    try:
        return McpHttpSettings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(f"VIKING_BRIDGE_MCP_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid MCP server configuration: {problems}") from None


def http_app(bridge: MemoryBridge, verifier: JwtTokenVerifier, settings: McpHttpSettings, issuers: tuple[str, ...], *, port: int | None = None) -> Starlette:
    """The streamable HTTP app; `issuers` are the JWT issuers (the first is the default authorization server)."""
    resource = settings.resource(port)
    auth = AuthSettings(issuer_url=str(settings.authorization_server or issuers[0]), resource_server_url=resource, validate_token_resource=False)
    loopback = settings.host in ("127.0.0.1", "localhost", "::1")
    hosts = [*(["127.0.0.1:*", "localhost:*", "[::1]:*"] if loopback else []), *settings.allowed_hosts]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=bool(hosts), allowed_hosts=hosts,
                                         allowed_origins=[f"http://{h}" for h in hosts])
    server = build_server(bridge, request_identity)
    ready = Route("/ready", lambda request: PlainTextResponse("ready"), methods=["GET"])  # operational, no identity involved
    return server.streamable_http_app(streamable_http_path=MCP_PATH, host=settings.host, auth=auth, token_verifier=verifier,
                                      transport_security=security, custom_starlette_routes=[ready])
