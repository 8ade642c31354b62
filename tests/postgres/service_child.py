"""One service replica on PostgreSQL (run by test_two_services.py, never imported by tests).

argv: app_url owner_url port gateway_secret. Builds the app from PostgreSQL parts — what
`viking-bridge serve` will do once `VIKING_BRIDGE_STATE_URL` selects them — and serves it on
127.0.0.1:port until SIGTERM/SIGKILL.
"""

from __future__ import annotations

import sys

import uvicorn

from adapters.postgres import PostgresBackend
from bridge.facade import MemoryBridge
from bridge.service.app import create_app
from bridge.service.auth import EdgeAuthenticator
from bridge.state.postgres import PostgresState
from identity.providers import ApiKeyProvider, ApiKeyStore, GatewayProvider
from identity.sessions import SessionBinder


def main(app_url: str, owner_url: str, port: str, secret: str) -> None:
    state = PostgresState(app_url, migrate_url=owner_url, pool_size=4)
    backend = PostgresBackend(app_url, migrate_url=owner_url, pool_size=4)
    bridge = MemoryBridge(backend, state, sessions=SessionBinder(state.session_repository()))
    auth = EdgeAuthenticator({
        "api_key": ApiKeyProvider(ApiKeyStore(state.api_key_repository())),
        "gateway": GatewayProvider(secret.encode(), nonce_cache=state.nonce_cache()),
    })
    uvicorn.run(create_app(bridge, auth), host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main(*sys.argv[1:5])
