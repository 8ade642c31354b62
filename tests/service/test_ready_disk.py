"""/ready is 503 when the disk the store or the state writes to is full: every request writes (a
recall is audited), so a full disk fails them all while a read-only probe would still pass.

In-process (the service's ASGI app over httpx's ASGI transport), the free space faked."""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path

import httpx

from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.routes import ops
from bridge.doors.http.settings import ServiceSettings
from bridge.facade import MemoryBridge
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore

Usage = namedtuple("Usage", "total used free")


async def test_ready_is_503_on_a_full_disk(tmp_path: Path, monkeypatch) -> None:
    bridge = MemoryBridge.open_local(tmp_path / "home")
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(ApiKeyStore(tmp_path / "keys.sqlite3"))}), ServiceSettings(rate_burst=0))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc.invalid") as c:
            assert ops._local_dirs(bridge), "the local store and state directories are probed"
            ready = await c.get("/ready")
            assert ready.status_code == 200 and ready.json()["checks"]["disk"] == "ok", ready.text
            monkeypatch.setattr(shutil, "disk_usage", lambda _: Usage(10**9, 10**9 - 4096, 4096))
            full = await c.get("/ready")
            assert full.status_code == 503 and full.json()["checks"]["disk"].startswith("failed"), full.text
    finally:
        await bridge.aclose()
