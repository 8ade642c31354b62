"""Process-local state (tests, throw-away bridges): the same guarantees as SQLite within one
process, none across processes — never for a deployment with several workers."""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
import time
import uuid
from dataclasses import replace
from typing import Any, Iterable, Sequence

from adapters.base import StoreMarker
from adapters.scopes import ScopeKey
from bridge.vocabulary import EVERY_AGENT
from bridge.state.common import check_quota
from bridge.state.records import QuotaLimits, ReaderSharing, Usage
from bridge.state.protocols import TENANT_ROW, WriteIntent
from bridge.state.common import carried_detail, check_audit_action, not_yet_carried, share_records, walk_chain
from bridge.state.records import STORING_ACTIONS, AuditEvent, AuditRecord, AuditView, Grant, InjectionManifest, Share
from identity.model import MemoryIdentity

__all__ = ["MemoryState"]


class MemoryAuditLog:
    def __init__(self) -> None:
        self._rows: list[tuple[str | None, AuditEvent]] = []  # (user_id, event)
        self._seq = itertools.count(1)
        self._intents: dict[str, WriteIntent] = {}
        self._marker: StoreMarker | None = None
        self._carried: dict[tuple[str, int], int] = {}  # (origin, origin seq) -> seq: rows a migration carried here

    async def append(
        self, identity: MemoryIdentity, action: str, *, memory_ids: Iterable[str] = (), scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (), detail: dict[str, Any] | None = None,
        closes_intent: str | None = None, store_marker: StoreMarker | None = None,
    ) -> int:
        check_audit_action(action)
        if closes_intent is not None and self._intents.pop(closes_intent, None) is None:
            recovered = self._recovered_seq(closes_intent)  # open checks reconciled it first: one row
            if recovered is not None:
                return recovered
        seq = next(self._seq)
        event = AuditEvent(
            seq, time.time(), identity.tenant_id, identity.principal, identity.session_id, action, tuple(memory_ids),
            tuple(sorted({str(s) for s in scopes})), tuple(sorted({g for g in grant_ids if g})), dict(detail or {}),
        )
        self._rows.append((identity.user_id, event))
        self._advance(store_marker)
        return seq

    async def append_read(
        self, identity: MemoryIdentity, action: str, *, memory_ids: Iterable[str] = (), scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (), detail: dict[str, Any] | None = None,
    ) -> int | None:
        """A read's row: nothing to group-commit in memory, so it is appended now (its seq)."""
        return await self.append(identity, action, memory_ids=memory_ids, scopes=scopes, grant_ids=grant_ids, detail=detail)

    async def append_stored(
        self, identity: MemoryIdentity, action: str, *, memory_id: str, scope: ScopeKey, backend_key: str, created: bool,
        closes_intent: str, detail: dict[str, Any] | None = None, store_marker: StoreMarker | None = None,
    ) -> int:
        check_audit_action(action)
        claimed = self._intents.pop(closes_intent, None) is not None
        for other in [i for i in self._intents.values() if i.scope == scope and i.backend_key == backend_key and i.action in STORING_ACTIONS]:
            del self._intents[other.intent_id]  # an earlier attempt of this same write: this row audits it
        if not created or not claimed:
            existing = self._stored_seq(identity.tenant_id, memory_id)
            if existing is not None:
                self._advance(store_marker)
                return existing
        return await self.append(identity, action, memory_ids=[memory_id], scopes=[scope], detail=detail, store_marker=store_marker)

    def _stored_seq(self, tenant_id: str, memory_id: str) -> int | None:
        """The row that already says `memory_id` was stored, if one does."""
        return next((
            e.seq for _, e in self._rows
            if e.tenant_id == tenant_id and memory_id in e.memory_ids
            and (e.action in STORING_ACTIONS or (e.action == "recovered" and e.detail.get("operation") in STORING_ACTIONS))
        ), None)

    def _recovered_seq(self, intent_id: str) -> int | None:
        return next((e.seq for _, e in self._rows if e.action == "recovered" and e.detail.get("intent") == intent_id), None)

    def _advance(self, marker: StoreMarker | None) -> None:
        """Like SQLite's MAX(writes) for the bound store: the recorded mark only moves forward."""
        if marker is not None and (self._marker is None or self._marker.store_id == marker.store_id):
            self._marker = StoreMarker(marker.store_id, max(marker.writes, self._marker.writes if self._marker else 0))

    async def query(
        self, view: AuditView, *, action: str | None = None, memory_id: str | None = None, since_seq: int = 0,
        before_seq: int | None = None, actor: str | None = None, limit: int = 100,
    ) -> list[AuditEvent]:
        out = [
            e for user, e in reversed(self._rows)
            if e.tenant_id == view.tenant_id and e.seq > since_seq and (before_seq is None or e.seq < before_seq)
            and (view.user_id is None or user == view.user_id) and (actor is None or e.actor == actor)
            and (action is None or e.action == action) and (memory_id is None or memory_id in e.memory_ids)
        ]
        return out[:limit]

    async def begin_intent(self, identity: MemoryIdentity, action: str, scope: ScopeKey, backend_key: str) -> str:
        intent = WriteIntent(uuid.uuid4().hex, identity.tenant_id, identity.principal, identity.user_id, identity.fingerprint, identity.session_id, action, scope, backend_key, time.time())
        self._intents[intent.intent_id] = intent
        return intent.intent_id

    async def open_intents(self) -> Sequence[WriteIntent]:
        return list(self._intents.values())

    async def close_intent(self, intent_id: str) -> None:
        self._intents.pop(intent_id, None)

    async def recover_intent(self, intent: WriteIntent, memory_ids: Sequence[str], store_marker: StoreMarker | None = None) -> int:
        if intent.action in STORING_ACTIONS and len(memory_ids) == 1 and (existing := self._stored_seq(intent.tenant_id, memory_ids[0])) is not None:
            self._intents.pop(intent.intent_id, None)  # a retry already audited this memory
            return existing
        seq = next(self._seq)
        detail = {"operation": intent.action, "intent": intent.intent_id, "announced_at": intent.created_at}
        self._rows.append((intent.user_id, AuditEvent(seq, time.time(), intent.tenant_id, intent.actor, intent.session_id, "recovered", tuple(memory_ids), (str(intent.scope),), (), detail)))
        self._intents.pop(intent.intent_id, None)
        self._advance(store_marker)
        return seq

    async def bound_store(self) -> StoreMarker | None:
        return self._marker

    async def bind_store(self, marker: StoreMarker) -> None:
        self._marker = marker

    async def has_rows(self) -> bool:
        return bool(self._rows)

    async def export_rows(self, tenant_id: str, *, after_seq: int = 0, limit: int = 500) -> list[AuditRecord]:
        # the fingerprint is not kept in process (no reader filters on it here)
        return [AuditRecord(e, user or "", "") for user, e in self._rows if e.tenant_id == tenant_id and e.seq > after_seq][:limit]

    async def import_rows(self, rows: Sequence[AuditRecord], origin: str) -> int:
        for row in rows:
            check_audit_action(row.event.action)
        fresh = not_yet_carried(rows, [seq for (o, seq) in self._carried if o == origin])
        for row in fresh:
            seq = next(self._seq)
            self._rows.append((row.user_id, replace(row.event, seq=seq, detail=carried_detail(row.event.detail, origin, row.event.seq))))
            self._carried[(origin, row.event.seq)] = seq
        return len(fresh)


class MemoryGrants:
    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}

    async def add(self, grant: Grant) -> None:
        self._grants[grant.grant_id] = grant

    async def get(self, grant_id: str) -> Grant | None:
        return self._grants.get(grant_id)

    async def for_grantee(self, tenant_id: str, user_id: str) -> list[Grant]:
        return [g for g in self._grants.values() if (g.tenant_id, g.grantee_user_id) == (tenant_id, user_id)]

    async def revoke(self, grant_id: str, at: float) -> bool:
        grant = self._grants.get(grant_id)
        if grant is None or grant.revoked_at is not None:
            return False
        self._grants[grant_id] = replace(grant, revoked_at=at)
        return True

    async def purge_grantee(self, tenant_id: str, user_id: str) -> int:
        doomed = [g.grant_id for g in await self.for_grantee(tenant_id, user_id)]
        for gid in doomed:
            del self._grants[gid]
        return len(doomed)

    async def for_tenant(self, tenant_id: str, *, limit: int = 1000) -> list[Grant]:
        return sorted((g for g in self._grants.values() if g.tenant_id == tenant_id), key=lambda g: -g.issued_at)[:limit]


class MemoryManifests:
    def __init__(self) -> None:
        self._manifests: dict[str, InjectionManifest] = {}

    async def add(self, manifest: InjectionManifest) -> None:
        self._manifests[manifest.manifest_id] = manifest

    async def get(self, manifest_id: str) -> InjectionManifest | None:
        return self._manifests.get(manifest_id)

    async def chain(self, manifest: InjectionManifest) -> list[InjectionManifest]:
        return await walk_chain(self.get, manifest)

    async def revoke_tree(self, manifest_id: str, at: float) -> int:
        tree, frontier = set(), {manifest_id}
        while frontier:
            tree |= frontier
            frontier = {m.manifest_id for m in self._manifests.values() if m.parent_manifest_id in frontier} - tree
        changed = 0
        for mid in tree:
            m = self._manifests.get(mid)
            if m is not None and m.revoked_at is None:
                self._manifests[mid] = replace(m, revoked_at=at)
                changed += 1
        return changed

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        changed = 0
        for mid, m in list(self._manifests.items()):
            kept = tuple(e for e in m.entries if e[1] not in memory_ids)
            if len(kept) != len(m.entries):
                self._manifests[mid] = replace(m, entries=kept)
                changed += 1
        return changed

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        doomed = [mid for mid, m in self._manifests.items() if (m.tenant_id, m.user_id) == (tenant_id, user_id)]
        for mid in doomed:
            del self._manifests[mid]
        return len(doomed)

    async def purge_expired(self, now: float, limit: int = 1000) -> int:
        doomed = [mid for mid, m in self._manifests.items() if not m.usable(now)][:limit]
        for mid in doomed:
            del self._manifests[mid]
        return len(doomed)

    async def count_active(self, tenant_id: str, user_id: str, now: float) -> int:
        return sum(1 for m in self._manifests.values() if (m.tenant_id, m.user_id) == (tenant_id, user_id) and m.usable(now))

    async def live_for_tenant(self, tenant_id: str, now: float, *, memory_id: str | None = None, limit: int = 1000) -> list[InjectionManifest]:
        found = (m for m in self._manifests.values() if m.tenant_id == tenant_id and m.usable(now) and (memory_id is None or memory_id in m.memory_ids))
        return sorted(found, key=lambda m: -m.created_at)[:limit]


class MemoryState:
    def __init__(self) -> None:
        self.audit = MemoryAuditLog()
        self.grants = MemoryGrants()
        self.manifests = MemoryManifests()
        self.usage = MemoryUsage()  # storage-quota counters (UsageLedger, bridge/state/protocols.py)
        self.teams = MemoryTeams()
        self.shares = MemoryShares(self.teams)

    def bound_store_id(self) -> str | None:
        marker = self.audit._marker
        return None if marker is None else marker.store_id

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class MemoryShares:
    """Process-local shares, indexed like the SQL tables (by memory and by reader); `teams` is
    the state's team membership, which `for_reader` reads with the shares."""

    def __init__(self, teams: "MemoryTeams") -> None:
        self._teams = teams
        self._by_memory: dict[tuple[ScopeKey, str], frozenset[str]] = {}
        self._by_reader: dict[tuple[str | None, str | None, str], set[tuple[ScopeKey, str]]] = defaultdict(set)
        self._at: dict[tuple[ScopeKey, str], float] = {}  # when each audience was set

    async def set_audience(self, scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> None:
        old = self._by_memory.pop((scope, memory_id), frozenset())
        for agent in old:
            self._by_reader[(scope.tenant_id, scope.user_id, agent)].discard((scope, memory_id))
        if audience:
            self._by_memory[(scope, memory_id)] = frozenset(audience)
            self._at[(scope, memory_id)] = at
            for agent in audience:
                self._by_reader[(scope.tenant_id, scope.user_id, agent)].add((scope, memory_id))

    async def audience_of(self, scope: ScopeKey, memory_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        return {m: a for m in memory_ids if (a := self._by_memory.get((scope, m)))}

    async def shared_with(self, tenant_id: str, user_id: str, agent_id: str) -> dict[ScopeKey, frozenset[str]]:
        out: dict[ScopeKey, set[str]] = defaultdict(set)
        for agent in {agent_id, EVERY_AGENT}:
            for owner in (user_id, None):  # None: a place of no single user (a narrowed team)
                for scope, memory_id in self._by_reader.get((tenant_id, owner, agent), ()):
                    out[scope].add(memory_id)
        return {k: frozenset(v) for k, v in out.items()}

    async def for_reader(self, tenant_id: str, user_id: str, agent_id: str) -> ReaderSharing:
        return ReaderSharing(await self.shared_with(tenant_id, user_id, agent_id), await self._teams.teams_of(tenant_id, agent_id))

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        doomed = [key for key in self._by_memory if key[1] in memory_ids]
        for scope, memory_id in doomed:
            await self.set_audience(scope, memory_id, frozenset(), 0.0)
        return len(doomed)

    async def purge_user(self, tenant_id: str, user_id: str) -> int:
        doomed = [key for key in self._by_memory if (key[0].tenant_id, key[0].user_id) == (tenant_id, user_id)]
        for scope, memory_id in doomed:
            await self.set_audience(scope, memory_id, frozenset(), 0.0)
        return len(doomed)

    async def of_tenant(self, tenant_id: str) -> list[Share]:
        rows = [(str(scope), mid, agent, self._at.get((scope, mid), 0.0)) for (scope, mid), agents in self._by_memory.items() if scope.tenant_id == tenant_id for agent in agents]
        return share_records(rows)


class MemoryTeams:
    def __init__(self) -> None:
        self._members: dict[tuple[str, str], frozenset[str]] = {}

    async def set_members(self, tenant_id: str, team_id: str, agent_ids: frozenset[str]) -> None:
        if agent_ids:
            self._members[(tenant_id, team_id)] = frozenset(agent_ids)
        else:
            self._members.pop((tenant_id, team_id), None)

    async def add_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        old = self._members.get((tenant_id, team_id), frozenset())
        self._members[(tenant_id, team_id)] = old | {agent_id}
        return agent_id not in old

    async def remove_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool:
        old = self._members.get((tenant_id, team_id), frozenset())
        await self.set_members(tenant_id, team_id, old - {agent_id})
        return agent_id in old

    async def members(self, tenant_id: str, team_id: str) -> frozenset[str]:
        return self._members.get((tenant_id, team_id), frozenset())

    async def teams_of(self, tenant_id: str, agent_id: str) -> frozenset[str]:
        return frozenset(team for (t, team), agents in self._members.items() if t == tenant_id and agent_id in agents)

    async def knows_agent(self, tenant_id: str, agent_id: str) -> bool:
        return bool(await self.teams_of(tenant_id, agent_id))

    async def has_teams(self, tenant_id: str) -> bool:
        return any(t == tenant_id for t, _ in self._members)

    async def of_tenant(self, tenant_id: str) -> dict[str, frozenset[str]]:
        return {team: agents for (t, team), agents in self._members.items() if t == tenant_id}


class MemoryUsage:
    """In-process counters (tests, the in-memory state); one asyncio lock makes reserve atomic."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Usage] = {}
        self._lock = asyncio.Lock()

    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        async with self._lock:
            rows = ((TENANT_ROW, "tenant", tenant), (user_id, "user", user))
            for uid, level, limits in rows:
                check_quota(level, self._rows.get((tenant_id, uid), Usage()), need, limits, tenant_id, user_id)
            for uid, _, _ in rows:
                held = self._rows.get((tenant_id, uid), Usage())
                self._rows[(tenant_id, uid)] = Usage(held.memories + need.memories, held.bytes + need.bytes)

    async def release(self, tenant_id: str, user_id: str, freed: Usage) -> None:
        async with self._lock:
            for uid in (TENANT_ROW, user_id):
                held = self._rows.get((tenant_id, uid), Usage())
                self._rows[(tenant_id, uid)] = Usage(max(0, held.memories - freed.memories), max(0, held.bytes - freed.bytes))

    async def usage(self, tenant_id: str, user_id: str = TENANT_ROW) -> Usage:
        return self._rows.get((tenant_id, user_id), Usage())

    async def of_tenant(self, tenant_id: str) -> dict[str, Usage]:
        return {user: held for (t, user), held in self._rows.items() if t == tenant_id}
