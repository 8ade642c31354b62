"""The migrated tenants' bridge state, carried from the source's state to the target's.

What moves, per named tenant (never another: every listing is one tenant's):

    grants       as they are (they name scopes and users, which a migration keeps), revoked and
                 expired ones too (the audit history names them)
    teams        each team's members, added to the target's (a membership there is never removed)
    usage        the quota counters, raised on the target to the source's (never lowered): the
                 copy is not a write through the bridge, so without them a tenant at its quota
                 would find fresh room on the target
    shares       each shared memory's audience, on the copy (its id through the id map)
    manifests    the live injection manifests, same id (the child still presents it), entries
                 through the id map. Carried whole or not at all: an entry whose memory is live
                 on the source but has no copy leaves the manifest behind and is reported (the run
                 is not ok); an entry whose memory is gone from the source too (expired, forgotten
                 since) delivers nothing on either side and is dropped, and reported as dropped
    audit        every row, oldest first, keeping its time, actor, session, action, scopes, grant
                 ids and detail; memory ids through the id map (an id the map lacks — a memory
                 forgotten long ago — stays as written); marked `detail.carried = {from, seq}`.
                 The target's state appends each (origin, seq) exactly once (`import_rows`)

Every step is idempotent (a re-run after a kill carries only what is missing, nothing twice);
sessions and API keys stay with the deployment (they are credentials of a deployment, not records
of the memories). `origin` is the place of the source's state (`state_place`): two endpoints
opened on the same state have nothing to carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Awaitable, Callable, Mapping, Sequence

from adapters.scopes import ScopeKey
from bridge.state.protocols import TENANT_ROW, BridgeState
from bridge.state.records import AuditRecord, InjectionManifest, QuotaLimits, Share, Usage

__all__ = ["KINDS", "StateTally", "StateCarry", "Live", "state_place", "planned_manifests", "planned_shares", "remapped_row", "carry_state"]

#: Listings take a limit; a migration wants every record of the tenant.
EVERY = 10_000_000
KINDS = ("grants", "teams", "usage", "shares", "manifests", "audit")

#: Whether memory (scope, id) is live on the source (asked only for ids the id map lacks).
Live = Callable[[ScopeKey, str], Awaitable[bool]]
Say = Callable[[str], None]


@dataclass
class StateTally:
    source: int = 0  # records of the named tenants in the source's state
    carried: int = 0  # written to the target's state by this run
    present: int = 0  # already there (an earlier, maybe killed, run)


@dataclass
class StateCarry:
    origin: str
    target: str
    tallies: dict[str, StateTally] = field(default_factory=lambda: {k: StateTally() for k in KINDS})
    left_out: list[str] = field(default_factory=list)  # records not carried, and why: the run is not ok
    dropped: list[str] = field(default_factory=list)  # manifest entries / shares of memories gone on both sides


def state_place(state: BridgeState) -> str:
    """Where a state lives, without credentials: the SQLite file, or the PostgreSQL server,
    database and schema. Equal places are one state (nothing to carry); it is also the `from`
    that carried audit rows name."""
    path = getattr(state, "path", None)
    if isinstance(path, Path):
        return f"sqlite:{path.resolve()}"
    pool, schema = getattr(state, "pool", None), getattr(state, "schema", None)
    if pool is not None and schema is not None:
        return f"{pool.where}#{schema}"
    return f"{type(state).__name__}@{id(state):x}"  # in-process: only itself is the same place


async def planned_manifests(
    source: BridgeState, tenant: str, id_map: Mapping[str, str], live: Live, now: float,
) -> tuple[list[InjectionManifest], list[str], list[str]]:
    """The tenant's live manifests as the target must hold them (parents before the manifests
    re-injected from them), plus what is left out and what is dropped, each said in words."""
    planned, left_out, dropped = [], [], []
    for m in sorted(await source.manifests.live_for_tenant(tenant, now, limit=EVERY), key=lambda m: (m.created_at, m.manifest_id)):
        entries, missing = [], []
        for scope, memory_id in m.entries:
            if memory_id in id_map:
                entries.append((scope, id_map[memory_id]))
            elif await live(scope, memory_id):
                missing.append(memory_id)
            else:
                dropped.append(f"manifest {m.manifest_id}: entry {memory_id} ({scope}) dropped: the memory is gone from the source too")
        if missing:
            left_out.append(f"manifest {m.manifest_id} not carried: {', '.join(missing)} live on the source but not copied to the target")
        else:
            planned.append(replace(m, entries=tuple(entries)))
    return planned, left_out, dropped


async def planned_shares(source: BridgeState, tenant: str, id_map: Mapping[str, str], live: Live) -> tuple[list[Share], list[str], list[str]]:
    """The tenant's shares on the copies' ids, plus what is left out and what is dropped."""
    planned, left_out, dropped = [], [], []
    for share in await source.shares.of_tenant(tenant):
        if share.memory_id in id_map:
            planned.append(replace(share, memory_id=id_map[share.memory_id]))
        elif await live(share.scope, share.memory_id):
            left_out.append(f"share of {share.memory_id} ({share.scope}) not carried: the memory is not copied to the target")
        else:
            dropped.append(f"share of {share.memory_id} ({share.scope}) dropped: the memory is gone from the source too")
    return planned, left_out, dropped


def remapped_row(row: AuditRecord, id_map: Mapping[str, str]) -> AuditRecord:
    return replace(row, event=replace(row.event, memory_ids=tuple(id_map.get(i, i) for i in row.event.memory_ids)))


async def carry_state(
    source: BridgeState, target: BridgeState, tenants: Sequence[str], id_map: Mapping[str, str], *, live: Live, now: float,
    batch: int = 500, say: Say | None = None,
) -> StateCarry:
    """Carry the named tenants' state from `source` to `target` (see the module docstring)."""
    report = StateCarry(state_place(source), state_place(target))
    tell = say or (lambda line: None)
    for tenant in dict.fromkeys(tenants):
        await _grants(source, target, tenant, report.tallies["grants"])
        await _teams(source, target, tenant, report.tallies["teams"])
        await _usage(source, target, tenant, report.tallies["usage"])
        shares, left, dropped = await planned_shares(source, tenant, id_map, live)
        report.left_out += left
        report.dropped += dropped
        tally = report.tallies["shares"]
        tally.source += len(shares) + len(left)
        for share in shares:
            if (await target.shares.audience_of(share.scope, [share.memory_id])).get(share.memory_id) == share.audience:
                tally.present += 1
            else:
                await target.shares.set_audience(share.scope, share.memory_id, share.audience, share.shared_at)
                tally.carried += 1
        manifests, left, dropped = await planned_manifests(source, tenant, id_map, live, now)
        report.left_out += left
        report.dropped += dropped
        tally = report.tallies["manifests"]
        tally.source += len(manifests) + len(left)
        for manifest in manifests:
            if await target.manifests.get(manifest.manifest_id) is not None:
                tally.present += 1  # the verification compares it
            else:
                await target.manifests.add(manifest)
                tally.carried += 1
        tell(f"migrate-state: {tenant}: grants, teams, usage, shares and manifests done")
        await _audit(source, target, tenant, id_map, report.origin, report.tallies["audit"], batch, tell)
    return report


async def _grants(source: BridgeState, target: BridgeState, tenant: str, tally: StateTally) -> None:
    for grant in sorted(await source.grants.for_tenant(tenant, limit=EVERY), key=lambda g: (g.issued_at, g.grant_id)):
        tally.source += 1
        there = await target.grants.get(grant.grant_id)
        if there is None:
            await target.grants.add(replace(grant, revoked_at=None))  # `add` stores a grant in force
            tally.carried += 1
        else:
            tally.present += 1
        if grant.revoked_at is not None and (there is None or there.revoked_at is None):
            await target.grants.revoke(grant.grant_id, grant.revoked_at)  # a kill between add and revoke: done now


async def _teams(source: BridgeState, target: BridgeState, tenant: str, tally: StateTally) -> None:
    for team, members in sorted((await source.teams.of_tenant(tenant)).items()):
        tally.source += 1
        missing = members - await target.teams.members(tenant, team)
        for agent in sorted(missing):
            await target.teams.add_member(tenant, team, agent)
        if missing:
            tally.carried += 1
        else:
            tally.present += 1


async def _usage(source: BridgeState, target: BridgeState, tenant: str, tally: StateTally) -> None:
    """Raise the target's counters to the source's. `reserve` adds to the tenant's row and one
    user's together, so the users' shortfalls are added first; a tenant row still short then (a
    count no user row explains) is reported by the verification."""
    rows = await source.usage.of_tenant(tenant)
    have = await target.usage.of_tenant(tenant)
    unlimited = QuotaLimits()
    for user, held in sorted(rows.items()):
        if user == TENANT_ROW:
            continue  # raised with the users' rows
        tally.source += 1
        there = have.get(user, Usage())
        short = Usage(max(0, held.memories - there.memories), max(0, held.bytes - there.bytes))
        if short == Usage():
            tally.present += 1
        else:
            await target.usage.reserve(tenant, user, short, unlimited, unlimited)
            tally.carried += 1


async def _audit(source: BridgeState, target: BridgeState, tenant: str, id_map: Mapping[str, str], origin: str, tally: StateTally, batch: int, tell: Say) -> None:
    after = 0
    while rows := await source.audit.export_rows(tenant, after_seq=after, limit=batch):
        added = await target.audit.import_rows([remapped_row(r, id_map) for r in rows], origin)
        tally.source += len(rows)
        tally.carried += added
        tally.present += len(rows) - added
        after = rows[-1].event.seq
        tell(f"migrate-state: {tenant}: audit {tally.source} rows ({tally.carried} carried)")
