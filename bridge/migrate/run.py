"""One migration run: copy, verify, audit, report (`viking-bridge migrate` calls this).

The audit row (action `migrate`, one per tenant) goes to the state kept beside the target
(the target's operators read it there) or, for a remote target, to the state given; it names
the operator the command was run as, the two endpoints (credentials redacted) and the counts.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any, Sequence

from bridge.errors import ConfigurationError
from bridge.migrate.copy import CopyReport, Progress, copy_memories, scopes_of
from bridge.migrate.endpoints import Endpoint
from bridge.migrate.verify import VerifyReport, verify
from bridge.state.protocols import BridgeState
from identity.model import MemoryIdentity

__all__ = ["MigrationReport", "migrate"]


@dataclass
class MigrationReport:
    source: str
    target: str
    tenants: tuple[str, ...]
    copied: CopyReport
    verification: VerifyReport | None

    @property
    def ok(self) -> bool:
        return self.verification is None or self.verification.ok

    def to_dict(self) -> dict[str, Any]:
        checks = {c.scope: c for c in (self.verification.scopes if self.verification else [])}
        return {
            "source": self.source, "target": self.target, "tenants": list(self.tenants), "ok": self.ok,
            "copied": self.copied.copied, "already_present": self.copied.present,
            "dangling_lineage": [{"memory_id": m, "parent_id": p} for m, p in self.copied.dangling],
            "scopes": [
                {"scope": t.scope, "source": t.source, "copied": t.copied, "already_present": t.present,
                 **({"verified": c.ok, "target": c.target, "matched": c.matched, "missing": len(c.missing), "differing": len(c.differing),
                     "extra": c.extra, "digest": c.target_digest} if (c := checks.get(t.scope)) else {})}
                for t in self.copied.scopes.values()
            ],
            "problems": self.verification.problems if self.verification else [],
            "id_map": self.copied.id_map,
        }


async def migrate(
    source: Endpoint, target: Endpoint, tenants: Sequence[str], *, include_global: bool = True, progress: Progress | None = None,
    check: bool = True, audit_state: BridgeState | None = None, operator: str = "operator", concurrency: int = 4, allow_empty: bool = False,
) -> MigrationReport:
    """Copy the tenants' memories from `source` to `target`, verify, and audit the run."""
    if source.spec == target.spec:
        raise ConfigurationError(f"source and target are the same backend ({source.spec})")
    state = target.state or audit_state
    if state is None:
        raise ConfigurationError(f"{target.spec} keeps no bridge state: give the state the migration is audited in")
    scopes = await scopes_of(source.backend, tenants, include_global, allow_empty=allow_empty)
    now = time.time()  # one instant for liveness: what the copy leaves out as expired, the check expects on neither side
    copied = await copy_memories(source.backend, target.backend, scopes, progress=progress, concurrency=concurrency, now=now)
    checked = await verify(source.backend, target.backend, scopes, now=now) if check else None
    report = MigrationReport(source.spec, target.spec, tuple(dict.fromkeys(tenants)), copied, checked)
    run = secrets.token_hex(6)
    for tenant in report.tenants:
        mine = [t for t in copied.scopes.values() if t.scope.startswith(f"{tenant}/")]
        actor = MemoryIdentity(tenant_id=tenant, user_id=operator, agent_id="migrate", session_id=f"migrate-{run}")
        await state.audit.append(
            actor, "migrate", scopes=[t.scope for t in mine],
            detail={"source": source.spec, "target": target.spec, "run": run, "copied": sum(t.copied for t in mine),
                    "already_present": sum(t.present for t in mine), "verified": None if checked is None else report.ok},
        )
    return report
