"""Copy every memory of the named tenants from one backend to another, resumably.

Per tenant, every scope the source lists (and the global scope once), page by page, every
status but tombstones: each memory is `put` into the *same* scope on the target under
`migration_key(scope, source id)`. A re-run recomputes the same keys, so the target returns the
copies it holds (`created=False`) and writes nothing new — that is what makes a killed migration
resumable with no journal. Lineage (`derived_from`) is translated to the target's ids: a memory
whose parent has not been copied yet waits until it has (parents are copied first).

Expired memories are gone (adapters/live.py): the source is read through the liveness rule at
one instant, `now`, so a memory expired by then is neither counted nor copied, and every copy
keeps its source's `expires_at`.

It never reads a scope the source did not list for that tenant, never writes a scope other than
the one it read from, and never decides visibility: a migration moves records, the policy stays.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol, Sequence

from adapters.base import MemoryBackend, Status, StoredMemory
from adapters.live import live_view
from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput, NotPermitted
from bridge.migrate.records import migration_key, to_new_memory

__all__ = ["Progress", "ScopeTally", "CopyReport", "copy_memories", "scopes_of", "COPIED_STATUSES"]

#: Tombstones are deletions a backend could not make physical: they are not copied.
COPIED_STATUSES = frozenset(Status) - {Status.FORGOTTEN}
PAGE = 200


class Progress(Protocol):
    """Told how much there is, then each memory done (the CLI draws a bar from it)."""

    def start(self, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...


class _Silent:
    def start(self, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass
class ScopeTally:
    scope: str
    source: int = 0  # memories read from the source
    copied: int = 0  # new on the target in this run
    present: int = 0  # already on the target (an earlier, maybe killed, run)


@dataclass
class CopyReport:
    scopes: dict[str, ScopeTally] = field(default_factory=dict)
    id_map: dict[str, str] = field(default_factory=dict)  # source id -> target id
    scope_of: dict[str, str] = field(default_factory=dict)  # source id -> its scope (on both sides)
    dangling: list[tuple[str, str]] = field(default_factory=list)  # (memory id, parent id absent from the source)

    @property
    def copied(self) -> int:
        return sum(t.copied for t in self.scopes.values())

    @property
    def present(self) -> int:
        return sum(t.present for t in self.scopes.values())


async def scopes_of(backend: MemoryBackend, tenants: Sequence[str], include_global: bool, *, allow_empty: bool = False) -> list[ScopeKey]:
    """Every scope of `tenants` the backend holds memories in, plus the global scope if asked.

    A named tenant with no memory at all in the source is an error (`InvalidInput` naming it):
    a mistyped tenant would otherwise copy nothing and report success. `allow_empty=True` is for
    a run that means it (a tenant that may legitimately be empty yet)."""
    if not tenants and not include_global:
        raise InvalidInput("name at least one tenant (or include the global scope)")
    keys: list[ScopeKey] = []
    empty: list[str] = []
    for tenant in dict.fromkeys(tenants):
        listed = await backend.list_scopes(tenant)
        if any(k.tenant_id != tenant for k in listed):  # a backend bug must not widen the copy
            raise NotPermitted(f"backend {backend.name} listed another tenant's scope for {tenant}")
        if not listed:
            empty.append(tenant)
        keys.extend(sorted(listed))
    if empty and not allow_empty:
        names = ", ".join(repr(t) for t in empty)
        raise InvalidInput(f"the source holds no memories of tenant {names}: is the tenant name right? (--allow-empty copies it anyway)")
    if include_global:
        keys.append(ScopeKey.global_())
    return keys


async def _pages(backend: MemoryBackend, scope: ScopeKey):  # type: ignore[no-untyped-def]
    cursor = None
    while True:
        page = await backend.list_page(scope, cursor=cursor, limit=PAGE, statuses=COPIED_STATUSES)
        yield page.memories
        cursor = page.next_cursor
        if cursor is None:
            return


async def count(backend: MemoryBackend, scopes: Sequence[ScopeKey]) -> int:
    total = 0
    for scope in scopes:
        async for memories in _pages(backend, scope):
            total += len(memories)
    return total


async def copy_memories(
    source: MemoryBackend, target: MemoryBackend, scopes: Sequence[ScopeKey], *, progress: Progress | None = None,
    concurrency: int = 4, now: float | None = None,
) -> CopyReport:
    """Copy the memories of `scopes` live at `now` (default: the call's start) from `source` to
    `target` (see the module docstring)."""
    if concurrency < 1:
        raise InvalidInput("concurrency must be at least 1")
    at = time.time() if now is None else now
    source = live_view(source, lambda: at)
    progress = progress or _Silent()
    progress.start(await count(source, scopes))
    report = CopyReport()
    known: set[str] = set()  # every source id seen: a parent outside it dangles in the source too
    waiting: list[StoredMemory] = []
    gate = asyncio.Semaphore(concurrency)

    async def put(memory: StoredMemory) -> None:
        async with gate:
            stored = await target.put(memory.scope, to_new_memory(memory, report.id_map), idempotency_key=migration_key(memory.scope, memory.id))
        if stored.scope != memory.scope:
            raise NotPermitted(f"backend {target.name} stored a migrated memory in {stored.scope}, not {memory.scope}")
        report.id_map[memory.id] = stored.id
        report.scope_of[memory.id] = str(memory.scope)
        tally = report.scopes[str(memory.scope)]
        if stored.created is False:
            tally.present += 1
        else:
            tally.copied += 1
        progress.advance()

    def ready(memory: StoredMemory) -> bool:
        return all(p in report.id_map for p in memory.provenance.derived_from)

    for scope in scopes:
        report.scopes.setdefault(str(scope), ScopeTally(str(scope)))
        async for memories in _pages(source, scope):
            report.scopes[str(scope)].source += len(memories)
            known.update(m.id for m in memories)
            batch = [m for m in memories if ready(m)]
            waiting.extend(m for m in memories if not ready(m))
            await asyncio.gather(*(put(m) for m in batch))
            waiting = await _release(waiting, ready, put)
    # what still waits has a parent that is waiting too (copied in dependency order below) or
    # one the source does not hold at all (lineage that already dangles there)
    while waiting:
        free = [m for m in waiting if all(p in report.id_map or p not in known for p in m.provenance.derived_from)]
        if not free:  # a cycle in lineage: copy one as is rather than never
            free = waiting[:1]
        for m in free:
            report.dangling.extend((m.id, p) for p in m.provenance.derived_from if p not in known)
            await put(m)
        waiting = [m for m in waiting if m.id not in report.id_map]
    return report


async def _release(waiting: list[StoredMemory], ready, put) -> list[StoredMemory]:  # type: ignore[no-untyped-def]
    """Copy the waiting memories whose parents have all arrived, until none is left that can go."""
    while True:
        free = [m for m in waiting if ready(m)]
        if not free:
            return waiting
        for m in free:
            await put(m)
        done = {m.id for m in free}
        waiting = [m for m in waiting if m.id not in done]
