"""Handler of `ExportMemories`: decide the scopes, audit the export, then stream the memories.

The decision and the `export` audit row happen before the first memory is read; the stream
walks exactly the decided scopes page by page (any size), and every record is checked against
the decision again (its scope, its tenant, who it is by or about) before it is yielded.
"""

from __future__ import annotations

from typing import AsyncIterator

from adapters.base import Status, StoredMemory
from adapters.scopes import ScopeKey
from bridge.operations.export import ExportMemories
from bridge.policy.reads import export_scopes, exports
from bridge.runtime import BridgeRuntime
from identity.model import MemoryIdentity

__all__ = ["export_memories"]

_EXPORTED = frozenset({Status.ACTIVE, Status.PENDING, Status.SUPERSEDED})


async def export_memories(rt: BridgeRuntime, identity: MemoryIdentity, op: ExportMemories) -> AsyncIterator[StoredMemory]:
    scopes = export_scopes(rt.policy, identity, await rt.backend.list_scopes(identity.tenant_id))
    await rt.state.audit.append(identity, "export", scopes=scopes, detail={"scopes": len(scopes)})
    return _stream(rt, identity, scopes)


async def _stream(rt: BridgeRuntime, identity: MemoryIdentity, scopes: list[ScopeKey]) -> AsyncIterator[StoredMemory]:
    for key in scopes:
        cursor: str | None = None
        while True:
            page = await rt.backend.list_page(key, cursor=cursor, limit=500, statuses=_EXPORTED)
            for memory in page.memories:
                if memory.scope == key and exports(identity, key, memory.status, memory.provenance.author_user_id, memory.subject_user_id):
                    yield memory
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
