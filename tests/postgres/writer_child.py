"""A replica that writes until it is killed (run by test_kill_a_replica.py, never imported by tests).

argv: app_url owner_url api_key. Prints `ack <n> <memory_id>` after each acknowledged write.
"""

from __future__ import annotations

import asyncio
import sys

from adapters.postgres import PostgresBackend
from bridge.facade import MemoryBridge
from bridge.state.postgres import PostgresState
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore
from identity.sessions import SessionBinder


async def main(app_url: str, owner_url: str, key: str) -> None:
    state = PostgresState(app_url, migrate_url=owner_url, pool_size=2)
    backend = PostgresBackend(app_url, migrate_url=owner_url, pool_size=2)
    await backend.open()
    bridge = MemoryBridge(backend, state, sessions=SessionBinder(state.session_repository()))
    alice = await ApiKeyProvider(ApiKeyStore(state.api_key_repository())).authenticate(ApiKey(key))
    for n in range(100_000):
        written = await bridge.remember(alice, f"note number {n}", "note", idempotency_key=f"write-{n}")
        print(f"ack {n} {written.memory_id}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
