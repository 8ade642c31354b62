"""A write that outlives the request timeout is never cut in half: the client gets a 503, the
write still lands, is audited, and a retry with the same idempotency key does not duplicate it.

In-process (the service's ASGI app over httpx's ASGI transport) because it needs a backend
that is slow on purpose; everything above the backend is the real service stack.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from adapters.local import LocalBackend
from bridge.facade import MemoryBridge
from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.settings import ServiceSettings
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore


class SlowPuts:
    """Delegates to a real LocalBackend; each put first waits `delay` seconds."""

    def __init__(self, inner: LocalBackend, delay: float) -> None:
        self.inner, self.delay = inner, delay

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.inner, name)

    async def put(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        await asyncio.sleep(self.delay)
        return await self.inner.put(*args, **kwargs)


async def test_write_that_times_out_still_lands_audited_and_retries_dedupe(tmp_path: Path) -> None:
    store = ApiKeyStore(tmp_path / "keys.sqlite3")
    key = store.issue(tenant_id="acme", user_id="slow-u1", agent_id="a", label="t").key
    backend = SlowPuts(LocalBackend(tmp_path / "store"), delay=0.5)
    bridge = MemoryBridge.with_backend(backend, tmp_path / "bridge")  # type: ignore[arg-type]
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(store)}), ServiceSettings(request_timeout_seconds=0.05, rate_burst=0))
    ctx = app.state.ctx
    await bridge.aopen()
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc.invalid", headers={"X-API-Key": key}) as c:
            body = {"content": "a slow but acknowledged-later memory", "kind": "note", "idempotency_key": "slow-1"}
            first = await c.post("/api/v1/memories", json=body)
            assert first.status_code == 503 and first.json()["error"] == "RequestTimeout"
            assert ctx.background, "the write was cancelled instead of finishing in the background"
            await asyncio.wait(list(ctx.background), timeout=10)
            backend.delay = 0.0
            retry = await c.post("/api/v1/memories", json=body)
            assert retry.status_code == 201 and retry.json()["deduplicated"] is True
            writes = (await c.get("/api/v1/audit", params={"action": "write"})).json()
            # the timed-out write was audited when it landed (the oldest row); the retry names the same memory
            assert writes and {tuple(w["memory_ids"]) for w in writes} == {(retry.json()["memory_id"],)}, writes
            listed = (await c.get("/api/v1/memories", params={"scope": retry.json()["scope"]})).json()["memories"]
            assert [m["memory_id"] for m in listed] == [retry.json()["memory_id"]]  # one memory, not two
    finally:
        await bridge.aclose()
        store.close()
