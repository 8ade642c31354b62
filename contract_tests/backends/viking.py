"""The Viking adapter for the contract suite: simulated by default, live when configured.

Simulated: every factory call builds a fresh `VikingSimulator` (so the backend is EMPTY), with a
bearer key granted for one shared tenant collection and one global collection.

Live (opt-in): set VIKING_MEMORY_URL, VIKING_MEMORY_COLLECTION and either VIKING_MEMORY_API_KEY
or VIKING_MEMORY_AK + VIKING_MEMORY_SK (optional: VIKING_MEMORY_REGION, VIKING_MEMORY_PROJECT,
VIKING_MEMORY_GLOBAL_COLLECTION, VIKING_MEMORY_EVENT_TYPE). Each factory call uses a unique
principal prefix (a throw-away namespace inside the collection) and batch-deletes every
principal it wrote on exit. Live runs register as `viking-live`; the reason they are skipped
names the missing variables.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
import uuid
from typing import AsyncIterator, Callable

from adapters.scopes import ScopeKey
from adapters.viking import ApiKeyAuth, RetryPolicy, SignerV4Auth, VikingBackend, VikingConfig, VikingMemoryClient
from contract_tests.registry import register_adapter
from identity.errors import ConfigurationError
from contract_tests.viking_simulator import VikingSimulator

__all__ = ["simulated_viking_backend", "live_viking_backend", "live_unavailable_reason", "SIM_API_KEY"]

SIM_API_KEY = "sim-contract-key"
SIM_TENANT_COLLECTION = "bridge_tenants"
SIM_GLOBAL_COLLECTION = "bridge_global"


def make_simulated(
    sim: VikingSimulator | None = None,
    *,
    retry: RetryPolicy | None = None,
    clock: Callable[[], float] | None = None,
    **config: object,
) -> tuple[VikingSimulator, VikingBackend]:
    """A simulator with both collections and a key, and a backend on it (for tests to reuse)."""
    sim = sim or VikingSimulator()
    for name in (SIM_TENANT_COLLECTION, SIM_GLOBAL_COLLECTION):
        if ("default", name) not in sim.collections:
            sim.create_collection(name)
    sim.add_api_key(SIM_API_KEY, collections={SIM_TENANT_COLLECTION, SIM_GLOBAL_COLLECTION})
    client = VikingMemoryClient("https://viking.simulator.test", ApiKeyAuth(SIM_API_KEY), transport=sim.transport(), retry=retry)
    cfg = VikingConfig(**{"shared_collection": SIM_TENANT_COLLECTION, "global_collection": SIM_GLOBAL_COLLECTION, **config})  # type: ignore[arg-type]
    return sim, VikingBackend(client, cfg, clock=clock or time.time)


async def insert_unscoped(backend: VikingBackend, tenant_id: str, content: str) -> None:
    """A raw row with no record envelope and no capture record, written straight through the
    client under the principals of the tenant's shared scope: the adapter must never return it."""
    scope = ScopeKey.tenant(tenant_id)
    await backend.client.event_add(
        backend.collection_for(scope), event_type=backend.config.event_type, memory_info={"summary": content}, user_id=backend.principal(scope)
    )


_extra: dict[str, object] = {}
if "insert_unscoped" in inspect.signature(register_adapter).parameters:  # newer registry
    _extra["insert_unscoped"] = insert_unscoped


@register_adapter("viking", description="hosted Viking Memory adapter on an in-process simulator of the service", **_extra)  # type: ignore[arg-type]
@contextlib.asynccontextmanager
async def simulated_viking_backend() -> AsyncIterator[VikingBackend]:
    _, backend = make_simulated()
    try:
        yield backend
    finally:
        await backend.aclose()


def live_unavailable_reason() -> str | None:
    missing = [v for v in ("VIKING_MEMORY_URL", "VIKING_MEMORY_COLLECTION") if not os.environ.get(v)]
    has_key = bool(os.environ.get("VIKING_MEMORY_API_KEY"))
    has_aksk = bool(os.environ.get("VIKING_MEMORY_AK") and os.environ.get("VIKING_MEMORY_SK"))
    if not (has_key or has_aksk):
        missing.append("VIKING_MEMORY_API_KEY (or VIKING_MEMORY_AK + VIKING_MEMORY_SK)")
    if missing:
        return "live Viking Memory run not configured; set " + ", ".join(missing)
    return None


@register_adapter(
    "viking-live",
    description="hosted Viking Memory, live service, throw-away principal namespace",
    unavailable_reason=live_unavailable_reason,
)
@contextlib.asynccontextmanager
async def live_viking_backend() -> AsyncIterator[VikingBackend]:
    reason = live_unavailable_reason()
    if reason:
        raise ConfigurationError(reason)
    env = os.environ
    if env.get("VIKING_MEMORY_API_KEY"):
        auth: ApiKeyAuth | SignerV4Auth = ApiKeyAuth(env["VIKING_MEMORY_API_KEY"])
    else:
        auth = SignerV4Auth(env["VIKING_MEMORY_AK"], env["VIKING_MEMORY_SK"], region=env.get("VIKING_MEMORY_REGION", "cn-beijing"))
    client = VikingMemoryClient(env["VIKING_MEMORY_URL"], auth, project_name=env.get("VIKING_MEMORY_PROJECT", "default"))
    config = VikingConfig(
        shared_collection=env["VIKING_MEMORY_COLLECTION"],
        global_collection=env.get("VIKING_MEMORY_GLOBAL_COLLECTION") or env["VIKING_MEMORY_COLLECTION"],
        event_type=env.get("VIKING_MEMORY_EVENT_TYPE", "sys_event_v1"),
        principal_prefix="ct" + uuid.uuid4().hex[:12],
    )
    backend = VikingBackend(client, config)
    try:
        yield backend
    finally:
        try:
            await backend.drop_namespace()
        finally:
            await backend.aclose()
