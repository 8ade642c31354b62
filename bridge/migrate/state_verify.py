"""Check the carried bridge state: both sides read again, compared record for record after the
id map (read-only on both sides).

Per kind: how many records the source holds, how many the target holds as expected (`matched`),
which it lacks (`missing`) or holds otherwise (`differing`), and how many more it holds
(`extra`: the target's own records — its `migrate` rows, grants issued there — are no fault).
Audit rows are found by their mark (`detail.carried`: this origin and the source seq): a row
carried twice is `differing`, as a duplicate memory is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from bridge.migrate.state import EVERY, Live, StateCarry, planned_manifests, planned_shares, remapped_row
from bridge.state.common import CARRIED, carried_detail
from bridge.state.protocols import BridgeState
from bridge.state.records import AuditRecord, Usage

__all__ = ["StateCheck", "StateReport", "verify_state"]


@dataclass
class StateCheck:
    kind: str
    source: int = 0
    matched: int = 0
    missing: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)
    extra: int = 0

    @property
    def ok(self) -> bool:
        return not self.missing and not self.differing


@dataclass
class StateReport:
    """The state step of one run: carried (with its tallies), or why not; and the comparison."""

    carry: StateCarry | None = None
    checks: list[StateCheck] = field(default_factory=list)
    skipped: str | None = None  # why nothing was carried (one state, or a target that keeps none here)

    @property
    def ok(self) -> bool:
        return (self.carry is None or not self.carry.left_out) and all(c.ok for c in self.checks)

    @property
    def problems(self) -> list[str]:
        out = list(self.carry.left_out[:20]) if self.carry else []
        for c in self.checks:
            out += [f"state {c.kind}: {what} is not on the target" for what in c.missing[:20]]
            out += [f"state {c.kind}: {what} differs on the target" for what in c.differing[:20]]
        return out

    def to_dict(self) -> dict[str, Any]:
        if self.carry is None:
            return {"carried": False, "skipped": self.skipped, "ok": self.ok}
        checks = {c.kind: c for c in self.checks}
        return {
            "carried": True, "ok": self.ok, "from": self.carry.origin, "to": self.carry.target,
            "kinds": {
                kind: {"source": t.source, "carried": t.carried, "already_present": t.present,
                       **({"verified": c.ok, "matched": c.matched, "missing": len(c.missing), "differing": len(c.differing), "extra": c.extra}
                          if (c := checks.get(kind)) else {})}
                for kind, t in self.carry.tallies.items()
            },
            "left_out": self.carry.left_out, "dropped": self.carry.dropped, "problems": self.problems,
        }


async def verify_state(
    source: BridgeState, target: BridgeState, tenants: Sequence[str], id_map: Mapping[str, str], origin: str, *, live: Live, now: float,
) -> list[StateCheck]:
    checks = {k: StateCheck(k) for k in ("grants", "teams", "usage", "shares", "manifests", "audit")}
    for tenant in dict.fromkeys(tenants):
        await _grants(source, target, tenant, checks["grants"])
        await _teams(source, target, tenant, checks["teams"])
        await _usage(source, target, tenant, checks["usage"])
        await _shares(source, target, tenant, id_map, live, checks["shares"])
        await _manifests(source, target, tenant, id_map, live, now, checks["manifests"])
        await _audit(source, target, tenant, id_map, origin, checks["audit"])
    return list(checks.values())


def _tally(check: StateCheck, key: str, expected: object, found: object) -> None:
    check.source += 1
    if found is None:
        check.missing.append(key)
    elif found != expected:
        check.differing.append(key)
    else:
        check.matched += 1


async def _grants(source: BridgeState, target: BridgeState, tenant: str, check: StateCheck) -> None:
    there = {g.grant_id: g for g in await target.grants.for_tenant(tenant, limit=EVERY)}
    mine = await source.grants.for_tenant(tenant, limit=EVERY)
    for grant in mine:
        _tally(check, f"grant {grant.grant_id}", grant, there.get(grant.grant_id))
    check.extra += len(set(there) - {g.grant_id for g in mine})


async def _teams(source: BridgeState, target: BridgeState, tenant: str, check: StateCheck) -> None:
    there = await target.teams.of_tenant(tenant)
    mine = await source.teams.of_tenant(tenant)
    for team, members in mine.items():
        found = there.get(team)
        _tally(check, f"team {team} of {tenant}", members, None if found is None else members & found)  # the target may have more
    check.extra += len(set(there) - set(mine))


async def _usage(source: BridgeState, target: BridgeState, tenant: str, check: StateCheck) -> None:
    there = await target.usage.of_tenant(tenant)
    for user, held in (await source.usage.of_tenant(tenant)).items():
        found = there.get(user, Usage())
        at_least = found.memories >= held.memories and found.bytes >= held.bytes  # raised to the source's, never lowered
        _tally(check, f"usage of {tenant}/{user or 'tenant'}", True, at_least)


async def _shares(source: BridgeState, target: BridgeState, tenant: str, id_map: Mapping[str, str], live: Live, check: StateCheck) -> None:
    planned, left, _ = await planned_shares(source, tenant, id_map, live)
    there = {(s.scope, s.memory_id): s.audience for s in await target.shares.of_tenant(tenant)}
    for share in planned:
        _tally(check, f"share of {share.memory_id} ({share.scope})", share.audience, there.get((share.scope, share.memory_id)))
    check.source += len(left)  # reported as left out by the carry
    check.missing += left
    check.extra += len(set(there) - {(s.scope, s.memory_id) for s in planned})


async def _manifests(source: BridgeState, target: BridgeState, tenant: str, id_map: Mapping[str, str], live: Live, now: float, check: StateCheck) -> None:
    planned, left, _ = await planned_manifests(source, tenant, id_map, live, now)
    for manifest in planned:
        _tally(check, f"manifest {manifest.manifest_id}", manifest, await target.manifests.get(manifest.manifest_id))
    check.source += len(left)
    check.missing += left
    ids = {m.manifest_id for m in planned}
    check.extra += sum(1 for m in await target.manifests.live_for_tenant(tenant, now, limit=EVERY) if m.manifest_id not in ids)


async def _all_rows(state: BridgeState, tenant: str) -> list[AuditRecord]:
    out: list[AuditRecord] = []
    while rows := await state.audit.export_rows(tenant, after_seq=out[-1].event.seq if out else 0, limit=1000):
        out += rows
    return out


def _content(row: AuditRecord) -> tuple:
    """A row without its seq (which each state numbers itself)."""
    e = row.event
    return (e.ts, e.tenant_id, e.actor, e.session_id, e.action, e.memory_ids, e.scopes, e.grant_ids, e.detail, row.user_id, row.actor_fingerprint)


async def _audit(source: BridgeState, target: BridgeState, tenant: str, id_map: Mapping[str, str], origin: str, check: StateCheck) -> None:
    carried: dict[int, list[AuditRecord]] = {}
    for row in await _all_rows(target, tenant):
        mark = row.event.detail.get(CARRIED)
        if isinstance(mark, dict) and mark.get("from") == origin and isinstance(mark.get("seq"), int):
            carried.setdefault(mark["seq"], []).append(row)
    mine = await _all_rows(source, tenant)
    for row in mine:
        copies = carried.get(row.event.seq, [])
        expected = remapped_row(row, id_map)
        expected = _content(expected)[:8] + (carried_detail(row.event.detail, origin, row.event.seq),) + _content(expected)[9:]
        key = f"audit row {row.event.seq} of {tenant}"
        if len(copies) > 1:
            check.source += 1
            check.differing.append(f"{key} (carried {len(copies)} times)")
        else:
            _tally(check, key, expected, _content(copies[0]) if copies else None)
    check.extra += len(set(carried) - {r.event.seq for r in mine})
