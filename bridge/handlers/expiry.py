"""Handler of `PurgeExpired`: delete a tenant's expired memories, each announced and audited.

Expired memories are already invisible (every adapter excludes them inside its search, get and
list refuse them); the purge is what frees their storage and quota. For each expired memory: a
write intent (`expired`, naming the memory id) -> `backend.delete` -> manifests forget the id ->
one audit row `expired` closing the intent -> the quota space is released. A crash after the
delete leaves the intent, and the next open audits it as `recovered` (bridge/writes/recovery.py), like a
forget. A run stops after `max_deletions` and says so (`complete=False`): a long purge is a loop
of runs, each one progress the caller can show (the CLI does).

Never decides who may purge (bridge/policy/reads.py: tenant admins); never deletes a memory that
has not expired at the run's own clock reading.
"""

from __future__ import annotations

from typing import AsyncIterator


from adapters.base import StoredMemory
from adapters.scopes import ScopeKey
from bridge.handlers.lifecycle import author_tenant
from bridge.operations import PurgeExpired
from bridge.policy.reads import may_purge_expired
from bridge.results import PurgeReport
from bridge.runtime import BridgeRuntime
from bridge.writes import retire_expired
from identity.model import MemoryIdentity

__all__ = ["purge_expired", "PAGE_SIZE"]

PAGE_SIZE = 500


async def _expired(rt: BridgeRuntime, key: ScopeKey, now: float) -> AsyncIterator[StoredMemory]:
    cursor: str | None = None
    while True:
        page = await rt.store.list_page(key, cursor=cursor, limit=PAGE_SIZE)
        for memory in page.memories:
            if memory.scope == key and memory.expired(now):
                yield memory
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def purge_expired(rt: BridgeRuntime, identity: MemoryIdentity, op: PurgeExpired) -> PurgeReport:
    may_purge_expired(identity)
    tenant, now = identity.tenant_id, rt.clock()
    scopes = list(await rt.store.list_scopes(tenant))
    include_global = rt.policy.includes_global_of(tenant)
    if include_global:
        scopes.append(ScopeKey.global_())
    purged: list[str] = []
    for n, key in enumerate(scopes):
        async for memory in _expired(rt, key, now):
            if key.tenant_id is None and author_tenant(memory) != tenant:
                continue  # the global scope: only what this tenant wrote
            if len(purged) >= op.max_deletions:
                return PurgeReport(tenant_id=tenant, purged=len(purged), scopes_scanned=n + 1, complete=False, memory_ids=tuple(purged))
            if await retire_expired(rt, identity, key, memory):
                purged.append(memory.id)
    return PurgeReport(tenant_id=tenant, purged=len(purged), scopes_scanned=len(scopes), complete=True, memory_ids=tuple(purged))
