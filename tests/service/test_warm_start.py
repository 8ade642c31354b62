"""`VIKING_BRIDGE_SERVICE_WARM_MB`: a service on the local store loads its scopes' partitions at
start, in a thread while it serves, so no user pays a scope's first read; off, it loads nothing.

In-process: the service's ASGI app and its lifespan, over a local store written beforehand."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from adapters.scopes import ScopeKey
from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.settings import ServiceSettings
from bridge.facade import MemoryBridge
from tests.kit import make_identity

SCOPES = (ScopeKey.private("acme", "alice"), ScopeKey.workspace("acme", "alpha"), ScopeKey.tenant("acme"))


async def _written(home: Path) -> None:
    bridge = MemoryBridge.open_local(home)
    alice = make_identity("alice", roles=("admin",))
    for visibility in ("private", "workspace", "tenant"):
        for i in range(3):
            await bridge.remember(alice, f"{visibility} note {i} about the deploy", "fact", visibility=visibility)
    await bridge.aclose()


async def _loaded_after_start(home: Path, settings: ServiceSettings) -> set[ScopeKey]:
    bridge = MemoryBridge.open_local(home)
    app = create_app(bridge, EdgeAuthenticator({}), settings)
    try:
        async with app.router.lifespan_context(app):
            for _ in range(200):  # the warm-up runs in a thread beside the loop
                if settings.warm_mb == 0 or set(bridge.backend.partition_loads) >= set(SCOPES):
                    break
                await asyncio.sleep(0.05)
            return set(bridge.backend.partition_loads)
    finally:
        await bridge.aclose()


async def test_a_service_started_with_a_warm_budget_has_loaded_every_scope(tmp_path: Path) -> None:
    await _written(tmp_path / "home")
    assert await _loaded_after_start(tmp_path / "home", ServiceSettings(warm_mb=64)) == set(SCOPES)


async def test_without_a_warm_budget_the_service_loads_nothing_at_start(tmp_path: Path) -> None:
    await _written(tmp_path / "home")
    assert await _loaded_after_start(tmp_path / "home", ServiceSettings()) == set()


async def test_a_shutdown_during_the_warm_up_stops_it_after_the_partition_being_loaded(tmp_path: Path) -> None:
    await _written(tmp_path / "home")
    bridge = MemoryBridge.open_local(tmp_path / "home")
    backend = bridge.backend
    load, entered = backend._partition, threading.Event()

    def slow_load(key):  # each partition takes a while: the shutdown arrives during the first
        entered.set()
        time.sleep(0.3)
        return load(key)

    backend._partition = slow_load
    app = create_app(bridge, EdgeAuthenticator({}), ServiceSettings(warm_mb=64, shutdown_grace_seconds=60))
    try:
        async with app.router.lifespan_context(app):
            while not entered.is_set():
                await asyncio.sleep(0.01)
        assert len(backend.partition_loads) == 1  # not the three a finished warm-up loads
    finally:
        await bridge.aclose()
