"""Who is calling the MCP server: the process's credential (stdio) or each request's bearer token (HTTP).

stdio: one server process serves one host connection, so identity is fixed when the process
starts, from the credential the host configured for it — an API key in `VIKING_BRIDGE_API_KEY`,
verified by the API-key provider against the key store (the shared state's on PostgreSQL), or,
only when the identity settings allow the development fallback (`VIKING_BRIDGE_PROVIDER` unset
or `dev`, never in production mode), the development identity. A configured real provider
without a key in the environment is a start-up error, not a fall-back.

streamable HTTP: every request carries `Authorization: Bearer <JWT>`, verified by the JWT
provider the settings describe (`VIKING_BRIDGE_JWT__*`) on every request; the identity rides on
the SDK's `AccessToken` (`IdentifiedAccessToken`) into the tool call that request carries.

Providers are built the way the service builds them (`bridge.doors.edge.build_edge_providers`),
and a credential that names no session gets the service's *default session* of the identity.
What this module must never do: build an identity from a tool argument, a header other than the
credential, or anything a model wrote.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict

from bridge.errors import ConfigurationError, VikingBridgeError
from bridge.doors.edge import build_edge_providers, default_session_id, default_session_key
from bridge.assembly.settings import BridgeSettings
from identity.model import MemoryIdentity
from identity.providers.base import ApiKey, BearerToken, DevEnvironment, IdentityProvider
from identity.settings import IdentitySettings, build_provider
from mcp.server.auth.provider import AccessToken

__all__ = ["API_KEY_ENV", "IdentifiedAccessToken", "JwtTokenVerifier", "stdio_identity", "jwt_verifier"]

log = logging.getLogger("viking_bridge.mcp")
API_KEY_ENV = "VIKING_BRIDGE_API_KEY"


class IdentifiedAccessToken(AccessToken):
    """The SDK's access token plus the identity the JWT provider verified from it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    identity: MemoryIdentity


async def stdio_identity(identity: IdentitySettings, bridge: BridgeSettings, *, environ: Mapping[str, str] | None = None,
                         shared_state: object = None) -> MemoryIdentity:
    """The one identity of a stdio server process, from the credential in its environment."""
    env = os.environ if environ is None else environ
    key = (env.get(API_KEY_ENV) or "").strip()
    if key:
        provider = build_edge_providers(identity, ["api_key"], bridge.home, shared_state=shared_state)["api_key"]
        who = await provider.authenticate(ApiKey(key))
        return who.with_session(default_session_id(who, default_session_key(bridge.home)))
    if identity.provider not in (None, "dev"):
        raise ConfigurationError(
            f"viking-bridge mcp over stdio takes its identity from an API key: set {API_KEY_ENV} in the server's environment "
            f"(VIKING_BRIDGE_PROVIDER={identity.provider} is configured, so the development identity is not used)"
        )
    provider = build_provider(identity, environ=env)  # the development fallback; refuses production mode
    log.warning("viking-bridge mcp: no %s set, serving the development identity (development mode only)", API_KEY_ENV)
    return await provider.authenticate(DevEnvironment())


class JwtTokenVerifier:
    """The SDK's `TokenVerifier` over the bridge's JWT provider; an invalid token is `None` (401)."""

    def __init__(self, provider: IdentityProvider, *, sessionless: bool, session_key: bytes | None = None) -> None:
        self.provider = provider
        self.sessionless = sessionless
        self.session_key = session_key or secrets.token_bytes(32)  # the server's, for default session ids

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            who = await self.provider.authenticate(BearerToken(token))
        except VikingBridgeError as exc:
            log.info("mcp: bearer token refused: %s", type(exc).__name__)
            return None
        if self.sessionless:
            who = who.with_session(default_session_id(who, self.session_key))
        # (client_id, subject) is the principal the SDK binds an Mcp-Session-Id to: another
        # identity's token cannot continue this MCP session
        return IdentifiedAccessToken(token=token, client_id=who.agent_id, subject=f"{who.tenant_id}/{who.user_id}/{who.fingerprint}",
                                     scopes=[], identity=who)


def jwt_verifier(identity: IdentitySettings, bridge: BridgeSettings, **build: Any) -> JwtTokenVerifier:
    """The verifier of `VIKING_BRIDGE_JWT__*`; without a JWT configuration a start-up error."""
    if identity.jwt is None:
        raise ConfigurationError("viking-bridge mcp --transport http verifies bearer tokens: configure VIKING_BRIDGE_JWT__ISSUER, "
                                 "VIKING_BRIDGE_JWT__AUDIENCE and a key source (docs/identity.md)")
    provider = build_edge_providers(identity, ["jwt"], bridge.home, **build)["jwt"]
    return JwtTokenVerifier(provider, sessionless=not identity.jwt.claims.session_id, session_key=default_session_key(bridge.home))
