"""One migration run: copy, carry the bridge state, verify, audit, report (`viking-bridge
migrate` calls this).

The bridge state (bridge/migrate/state.py) is carried when both endpoints keep their state beside
the memories (local, postgres) and the two states are different places; otherwise the report says
why not, and `migrate_state` (`viking-bridge migrate --state-only`) is the step that carries it
into the state a viking or openviking deployment keeps at its home or STATE_URL.

The audit row (action `migrate`, one per tenant) goes to the state kept beside the target
(the target's operators read it there) or, for a remote target, to the state given; it names
the operator the command was run as, the two endpoints (credentials redacted) and the counts.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any, Sequence

from adapters.base import MemoryBackend, Status
from adapters.live import live_view
from bridge.errors import ConfigurationError, NotFound
from bridge.migrate.copy import CopyReport, Progress, copy_memories, scopes_of
from bridge.migrate.endpoints import Endpoint
from bridge.migrate.state import Live, Say, carry_state, state_place
from bridge.migrate.state_verify import StateReport, verify_state
from bridge.migrate.verify import VerifyReport, verify
from bridge.state.protocols import BridgeState
from identity.model import MemoryIdentity

__all__ = ["MigrationReport", "migrate", "migrate_state", "KEEPS_STATE"]

#: Backends whose bridge state is part of the endpoint (the home's SQLite, the same PostgreSQL).
KEEPS_STATE = frozenset({"local", "postgres"})


@dataclass
class MigrationReport:
    source: str
    target: str
    tenants: tuple[str, ...]
    copied: CopyReport
    verification: VerifyReport | None
    state: StateReport | None = None

    @property
    def ok(self) -> bool:
        return (self.verification is None or self.verification.ok) and (self.state is None or self.state.ok)

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
            "problems": (self.verification.problems if self.verification else []) + (self.state.problems if self.state else []),
            "state": None if self.state is None else self.state.to_dict(),
            "id_map": self.copied.id_map,
        }


async def migrate(
    source: Endpoint, target: Endpoint, tenants: Sequence[str], *, include_global: bool = True, progress: Progress | None = None,
    check: bool = True, audit_state: BridgeState | None = None, operator: str = "operator", concurrency: int = 4, allow_empty: bool = False,
    carry: bool = True, batch: int = 500, say: Say | None = None,
) -> MigrationReport:
    """Copy the tenants' memories from `source` to `target`, carry their bridge state (unless
    `carry=False`, or see the module docstring), verify both, and audit the run."""
    if source.spec == target.spec:
        raise ConfigurationError(f"source and target are the same backend ({source.spec})")
    state = target.state or audit_state
    if state is None:
        raise ConfigurationError(f"{target.spec} keeps no bridge state: give the state the migration is audited in")
    scopes = await scopes_of(source.backend, tenants, include_global, allow_empty=allow_empty)
    now = time.time()  # one instant for liveness: what the copy leaves out as expired, the check expects on neither side
    copied = await copy_memories(source.backend, target.backend, scopes, progress=progress, concurrency=concurrency, now=now)
    kinds = {e.spec.partition(":")[0] for e in (source, target)}
    if not carry:
        carried = StateReport(skipped="not asked (--no-state)")
    elif not kinds <= KEEPS_STATE or source.state is None or target.state is None:
        carried = StateReport(skipped="the bridge state of a viking or openviking endpoint is the deployment's (its home or STATE_URL): "
                                      "carry it with `migrate --state-only` against that deployment")
    else:
        carried = await _carry(source, target, source.state, target.state, tenants, copied.id_map, now=now, check=check, batch=batch, say=say)
    checked = await verify(source.backend, target.backend, scopes, now=now) if check else None
    report = MigrationReport(source.spec, target.spec, tuple(dict.fromkeys(tenants)), copied, checked, carried)
    run = secrets.token_hex(6)
    for tenant in report.tenants:
        mine = [t for t in copied.scopes.values() if t.scope.startswith(f"{tenant}/")]
        actor = MemoryIdentity(tenant_id=tenant, user_id=operator, agent_id="migrate", session_id=f"migrate-{run}")
        await state.audit.append(
            actor, "migrate", scopes=[t.scope for t in mine],
            detail={"source": source.spec, "target": target.spec, "run": run, "copied": sum(t.copied for t in mine),
                    "already_present": sum(t.present for t in mine), "verified": None if checked is None else report.ok,
                    "state_carried": sum(t.carried for t in carried.carry.tallies.values()) if carried.carry else None},
        )
    return report


def live_on(backend: MemoryBackend, now: float) -> Live:
    """Whether a memory is live on `backend` at `now` (asked only for ids the id map lacks)."""
    view = live_view(backend, lambda: now)

    async def live(scope, memory_id):  # type: ignore[no-untyped-def]
        try:
            return (await view.get(scope, memory_id)).status is not Status.FORGOTTEN
        except NotFound:
            return False

    return live


def _one_state(a: BridgeState, b: BridgeState) -> bool:
    """The same place, or two names of one (a PostgreSQL server reached by two host names): a
    state bound to the very store the other is bound to is that state."""
    if state_place(a) == state_place(b):
        return True
    bound = a.bound_store_id()
    return bound is not None and bound == b.bound_store_id()


async def _carry(
    source: Endpoint, target: Endpoint, source_state: BridgeState, target_state: BridgeState, tenants: Sequence[str],
    id_map: dict[str, str], *, now: float, check: bool, batch: int, say: Say | None,
) -> StateReport:
    if _one_state(source_state, target_state):
        return StateReport(skipped=f"both endpoints keep one bridge state ({state_place(source_state)}): nothing to carry")
    live = live_on(source.backend, now)
    carry = await carry_state(source_state, target_state, tenants, id_map, live=live, now=now, batch=batch, say=say)
    checks = await verify_state(source_state, target_state, tenants, id_map, carry.origin, live=live, now=now) if check else []
    return StateReport(carry, checks)


async def migrate_state(
    source: Endpoint, target: Endpoint, tenants: Sequence[str], id_map: dict[str, str], *, check: bool = True, batch: int = 500,
    say: Say | None = None,
) -> MigrationReport:
    """The state step alone (`migrate --state-only`): the memories were copied before (`id_map`
    is that run's report's), or the target's state is the deployment's rather than the backend's."""
    if source.state is None or target.state is None:
        raise ConfigurationError("both endpoints need a bridge state to carry it (VIKING_BRIDGE_HOME or VIKING_BRIDGE_STATE_URL)")
    carried = await _carry(source, target, source.state, target.state, tenants, id_map, now=time.time(), check=check, batch=batch, say=say)
    return MigrationReport(source.spec, target.spec, tuple(dict.fromkeys(tenants)), CopyReport(id_map=dict(id_map)), None, carried)
