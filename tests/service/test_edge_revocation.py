"""A key revoked by another process is refused by the service on the very next request, however
many requests it has just served with it (the edge keeps decoded rows and validated identities
between requests, never a verdict)."""

from __future__ import annotations

from pathlib import Path

import httpx

from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.settings import ServiceSettings
from bridge.facade import MemoryBridge
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore


async def test_revoked_key_is_refused_on_the_next_request(tmp_path: Path) -> None:
    keys = tmp_path / "keys.sqlite3"
    admin, served = ApiKeyStore(keys), ApiKeyStore(keys)  # the admin command's connection and the worker's
    issued = admin.issue(tenant_id="acme", user_id="u1", agent_id="a", workspace_id="alpha")
    other = admin.issue(tenant_id="acme", user_id="u2", agent_id="a", workspace_id="alpha")
    bridge = MemoryBridge.open_local(tmp_path / "data")
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(served)}), ServiceSettings(rate_burst=0))
    await bridge.aopen()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc.invalid") as client:
            for session in (None, "s-1", None, "s-1", None):  # the default session and a named one, caches warm
                headers = {"X-API-Key": issued.key} | ({"X-Session-Id": session} if session else {})
                assert (await client.get("/api/v1/recall", params={"query": "q"}, headers=headers)).status_code == 200
            assert admin.revoke(issued.record.key_id)
            for headers in ({"X-API-Key": issued.key}, {"X-API-Key": issued.key, "X-Session-Id": "s-1"}, {"Authorization": f"Bearer {issued.key}"}):
                refused = await client.get("/api/v1/recall", params={"query": "q"}, headers=headers)
                assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
            assert (await client.get("/api/v1/recall", params={"query": "q"}, headers={"X-API-Key": other.key})).status_code == 200
    finally:
        await bridge.aclose()
        admin.close()
        served.close()
