"""/docs is off unless configured: it needs no credential, shares the admin console's origin and
runs Swagger UI's scripts from a public CDN, so a deployment opts in (`VIKING_BRIDGE_SERVICE_DOCS`).

In-process (the service's ASGI app over httpx's ASGI transport): only the route table matters.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.settings import ServiceSettings, load_service_settings
from bridge.facade import MemoryBridge
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore


async def _docs_status(tmp_path: Path, settings: ServiceSettings) -> int:
    bridge = MemoryBridge.open_local(tmp_path / "home")
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(ApiKeyStore(tmp_path / "keys.sqlite3"))}), settings)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc.invalid") as c:
            return (await c.get("/docs")).status_code
    finally:
        await bridge.aclose()


async def test_docs_is_not_served_by_default(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("VIKING_BRIDGE_SERVICE_DOCS", raising=False)
    assert load_service_settings().docs is False
    assert await _docs_status(tmp_path, ServiceSettings(rate_burst=0)) == 404


async def test_docs_is_served_when_configured(tmp_path: Path) -> None:
    assert await _docs_status(tmp_path, ServiceSettings(rate_burst=0, docs=True)) == 200
