"""The service's periodic purge of expired memories (`VIKING_BRIDGE_SERVICE_PURGE_*`).

Every `purge_interval_seconds`, for each configured maintenance API key (one tenant admin's key
per tenant, issued with `viking-bridge keys issue --roles admin`), the service authenticates the
key through its own `EdgeAuthenticator` — identity comes from a credential here too, never made
up — and runs `PurgeExpired` in bounded runs until the tenant is clean. Each deletion has its
write intent and audit row `expired` in that admin's name (bridge/handlers/expiry.py).

With several workers or replicas each runs the loop; that is safe (a memory another purger
deleted first is closed without a second audit row) and only costs duplicate scans. A failure
is logged and retried at the next tick; it never stops the service. Never decides who may purge
(the policy refuses a non-admin key, logged).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Sequence

from bridge.errors import VikingBridgeError

__all__ = ["purge_once", "purge_loop"]

log = logging.getLogger("viking_bridge.maintenance")
PATH = "/api/v1/purge-expired"


async def purge_once(bridge: Any, auth: Any, keys: Sequence[str], *, batch: int = 1000) -> dict[str, int]:
    """One pass over every key's tenant; returns {tenant: memories purged}. Errors are logged."""
    purged: dict[str, int] = {}
    for n, key in enumerate(keys):
        try:
            admin = await auth.authenticate("POST", PATH, [("x-api-key", key)], b"")
            while True:
                report = await bridge.purge_expired(admin, max_deletions=batch)
                purged[report.tenant_id] = purged.get(report.tenant_id, 0) + report.purged
                if report.complete:
                    break
                log.info("purge of %s: %d expired memories so far, continuing", report.tenant_id, purged[report.tenant_id])
        except VikingBridgeError as exc:
            log.error("periodic purge with maintenance key #%d failed: %s: %s", n + 1, type(exc).__name__, exc)
    if purged:
        log.info("periodic purge: %s", ", ".join(f"{t}={c}" for t, c in sorted(purged.items())))
    return purged


async def purge_loop(bridge: Any, auth: Any, keys: Sequence[str], interval: float, *, batch: int = 1000) -> None:
    """Run `purge_once` every `interval` seconds until cancelled (the service's lifespan does)."""
    while True:
        await asyncio.sleep(interval)
        try:
            await purge_once(bridge, auth, keys, batch=batch)
        except Exception:  # never let maintenance take the service down
            log.exception("periodic purge failed unexpectedly")
