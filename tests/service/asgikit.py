"""The service's ASGI app in this process, over httpx's ASGI transport: for tests that must look
inside the app or the event loop while requests run (a real `serve` process is servicekit.py's)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import httpx

from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.settings import ServiceSettings
from bridge.facade import MemoryBridge
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore


@asynccontextmanager
async def in_process_service(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, Any, MemoryBridge]]:
    """(client, app, bridge): a local store with one memory, a client holding user u1's API key,
    and one recall already made (it builds the app's middleware stack)."""
    store = ApiKeyStore(tmp_path / "keys.sqlite3")
    key = store.issue(tenant_id="acme", user_id="u1", agent_id="a", workspace_id="alpha", label="t").key
    bridge = MemoryBridge.open_local(tmp_path / "data")
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(store)}), ServiceSettings(rate_burst=0))
    await bridge.aopen()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc.invalid", headers={"X-API-Key": key}) as client:
            await client.post("/api/v1/memories", json={"content": "the deployment runbook lives in the ops wiki", "kind": "fact"})
            await client.get("/api/v1/recall", params={"query": "warm"})
            yield client, app, bridge
    finally:
        await bridge.aclose()
        store.close()
