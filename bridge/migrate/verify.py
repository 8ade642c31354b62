"""Check a migration: every source memory has its copy on the target, field for field.

Per scope: the source count, the copies found (by their migration key, so the check is exact,
not a count that two errors could balance), the copies whose fingerprint differs, the target's
memories that no source memory explains, and one digest per side over the sorted fingerprints
(equal iff the scope arrived whole). Read-only on both sides.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Sequence

from adapters.base import MemoryBackend
from adapters.live import live_view
from adapters.scopes import ScopeKey
from bridge.migrate.copy import _pages
from bridge.migrate.records import fingerprint, migration_key

__all__ = ["ScopeCheck", "VerifyReport", "verify"]


@dataclass
class ScopeCheck:
    scope: str
    source: int = 0
    target: int = 0
    matched: int = 0
    missing: list[str] = field(default_factory=list)  # source ids with no copy
    differing: list[str] = field(default_factory=list)  # source ids whose copy differs
    source_digest: str = ""
    target_digest: str = ""

    @property
    def extra(self) -> int:
        """Target memories in this scope that are no copy of a source memory."""
        return self.target - self.matched - len(self.differing)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.differing and self.source_digest == self.target_digest


@dataclass
class VerifyReport:
    scopes: list[ScopeCheck]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.scopes)

    @property
    def problems(self) -> list[str]:
        out = []
        for c in self.scopes:
            out += [f"{c.scope}: {mid} has no copy on the target" for mid in c.missing[:20]]
            out += [f"{c.scope}: the copy of {mid} differs from it" for mid in c.differing[:20]]
            if c.extra and not c.missing and not c.differing:
                out.append(f"{c.scope}: the target holds {c.extra} memories no source memory explains")
        return out


def _digest(prints: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(prints)).encode()).hexdigest()


async def verify(source: MemoryBackend, target: MemoryBackend, scopes: Sequence[ScopeKey], *, now: float | None = None) -> VerifyReport:
    """Compare `scopes` on both sides, each read through the liveness rule at `now` (the copy's
    instant; default the call's start), so an expired memory is expected on neither side. Lineage
    may point into another scope, so every copy is found first and compared once all source ids
    are mapped (this holds the pairs in memory)."""
    at = time.time() if now is None else now
    source, target = live_view(source, lambda: at), live_view(target, lambda: at)
    checks = {str(scope): ScopeCheck(str(scope)) for scope in scopes}
    source_prints: dict[str, list[str]] = {key: [] for key in checks}
    id_map: dict[str, str] = {}
    pairs = []
    for scope in scopes:
        check = checks[str(scope)]
        async for memories in _pages(source, scope):
            for memory in memories:
                check.source += 1
                copy = await target.find_by_idempotency_key(scope, migration_key(scope, memory.id))
                if copy is None:
                    check.missing.append(memory.id)
                    source_prints[str(scope)].append(fingerprint(memory))
                else:
                    id_map[memory.id] = copy.id
                    pairs.append((memory, copy))
    for memory, copy in pairs:
        check = checks[str(memory.scope)]
        expected = fingerprint(memory, id_map)
        source_prints[str(memory.scope)].append(expected)
        if expected == fingerprint(copy):
            check.matched += 1
        else:
            check.differing.append(memory.id)
    for scope in scopes:
        check, target_prints = checks[str(scope)], []
        async for memories in _pages(target, scope):
            check.target += len(memories)
            target_prints += [fingerprint(m) for m in memories]
        check.source_digest, check.target_digest = _digest(source_prints[str(scope)]), _digest(target_prints)
    return VerifyReport(list(checks.values()))
