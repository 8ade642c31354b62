"""What a store of the bridge's own state must guarantee (SQLite today, PostgreSQL next).

Every method is async so a networked implementation fits the same shape. Implementations keep
integrity rules only (append-only audit, unique ids); they never decide who may do what.

AuditLog
- `append` is durable before it returns for state-changing actions; rows are never updated or
  deleted; `seq` is one increasing sequence for the whole deployment (several replicas share it).
- a write intent is recorded durably BEFORE the backend write and closed in the same
  transaction as that write's audit row, so a crash between the backend commit and the audit row
  leaves an open intent the next open reconciles (audited as `recovered`) — every stored memory
  gets its audit row.
- the store marker (which memory store this log describes, and how far it has got) is updated
  in the same transaction as the audit row of the write that moved it.

GrantRepository / ManifestRepository
- loads return exactly what was stored; a revocation is visible to every reader at once;
  `revoke_tree` ends a manifest and every manifest derived from it in one transaction.

UsageLedger (storage quotas: one counter row per tenant and per user)
- one counter row per tenant and per user.

  `reserve` checks and adds in ONE transaction (SQLite: BEGIN IMMEDIATE, one writer at a time
  across processes; PostgreSQL: the two counter rows locked FOR UPDATE, tenant row first so two
  writers never deadlock), so concurrent writers — on one machine or on several replicas of one
  PostgreSQL — can never both take the last slot: a write either fits (and is counted) or raises
  `QuotaExceeded` having changed nothing. `release` gives space back (never below zero).

  The counters are the bridge's own record of what it stored while quotas were configured: a
  memory written before, or removed behind the bridge's back, is not in them. A write whose
  backend call failed retryably stays counted (it may have landed; fail closed) until the memory
  is forgotten or expires. The tenant's own row uses user id "" (ids are never empty).

  Never decides who may write; `bridge.writes` asks, with the limits `bridge.policy.quotas` resolved.

Migration (bridge/migrate/state.py)
- per-tenant listings (`ShareRepository.of_tenant`, `TeamRepository.of_tenant`,
  `UsageLedger.of_tenant`, `AuditLog.export_rows`) read one tenant's records only;
  `AuditLog.import_rows` appends rows carried from another state exactly once per (origin, origin
  seq), recorded in the same transaction as the rows, keeping each row's time and actor.

ShareRepository / TeamRepository
- a **share** says: memory `memory_id`, stored in an agent's own scope (`acme/agent/<author>/<user>`
  or a task scope), may also be read by these other agents of the same user (`"*"` = every agent
  of that user). The memory never moves; the policy turns the shares a reader holds into
  `ScopeEntry(author_scope, memory_ids=...)`, which every adapter enforces inside its query, so
  narrowing or widening an audience is one update, effective at the next query on every backend.
- a **team** is a set of agent ids of one tenant; `acme/team/<team_id>` is read and written only
  by its members.
- integrity rules only (one row per (scope, memory, agent), one per (tenant, team, agent)); the
  reader's lookups are indexed (`shared_with` by tenant, user, agent; `teams_of` by tenant, agent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from adapters.base import StoreMarker
from adapters.scopes import ScopeKey
from bridge.state.records import QuotaLimits, Usage
from bridge.state.records import AuditEvent, AuditRecord, AuditView, Grant, InjectionManifest, ReaderSharing, Share
from identity.model import MemoryIdentity

__all__ = ["AuditLog", "GrantRepository", "ManifestRepository", "ShareRepository", "TeamRepository", "UsageLedger", "TENANT_ROW", "BridgeState", "WriteIntent"]


@dataclass(frozen=True)
class WriteIntent:
    """A write announced before it reached the backend (see AuditLog)."""

    intent_id: str
    tenant_id: str
    actor: str
    user_id: str
    actor_fingerprint: str
    session_id: str
    action: str
    scope: ScopeKey
    backend_key: str  # the idempotency key the backend stored it under
    created_at: float


@runtime_checkable
class AuditLog(Protocol):
    async def append(
        self,
        identity: MemoryIdentity,
        action: str,
        *,
        memory_ids: Iterable[str] = (),
        scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (),
        detail: dict[str, Any] | None = None,
        closes_intent: str | None = None,
        store_marker: StoreMarker | None = None,
    ) -> int:
        """Append one row; return its seq. `closes_intent` and `store_marker` commit with it."""
        ...

    async def append_stored(
        self,
        identity: MemoryIdentity,
        action: str,
        *,
        memory_id: str,
        scope: ScopeKey,
        backend_key: str,
        created: bool,
        closes_intent: str,
        detail: dict[str, Any] | None = None,
        store_marker: StoreMarker | None = None,
    ) -> int:
        """The one audit row of a stored memory, exactly once, in one transaction: close the
        write's intent *and every other open intent of the same write* (same scope and backend
        key: an earlier attempt that failed retryably or crashed after the put), then insert the
        row unless the memory already has one (a deduplicated retry of an audited write, or an
        intent open checks reconciled as `recovered`); return the seq of the memory's row."""
        ...

    async def query(
        self, view: AuditView, *, action: str | None = None, memory_id: str | None = None, since_seq: int = 0,
        before_seq: int | None = None, actor: str | None = None, limit: int = 100,
    ) -> list[AuditEvent]:
        """Rows inside `view`, newest first, with `since_seq < seq < before_seq` (no upper bound
        when `before_seq` is None): `before_seq` = the smallest seq of a page pages back."""
        ...

    async def begin_intent(self, identity: MemoryIdentity, action: str, scope: ScopeKey, backend_key: str) -> str:
        ...

    async def open_intents(self) -> Sequence[WriteIntent]:
        ...

    async def close_intent(self, intent_id: str) -> None:
        """Close an intent whose write never landed (nothing to audit)."""
        ...

    async def recover_intent(self, intent: WriteIntent, memory_ids: Sequence[str], store_marker: StoreMarker | None = None) -> int:
        """Audit a write that landed but lost its audit row to a crash (`recovered`, in the
        intent's actor's name) and close the intent, in one transaction; return the seq. A
        stored memory that already has its row (a retry audited it) only closes the intent:
        that row's seq is returned and nothing is inserted."""
        ...

    async def bound_store(self) -> StoreMarker | None:
        """The store this log describes (None for a log that never recorded a write)."""
        ...

    async def bind_store(self, marker: StoreMarker) -> None:
        """Record `marker` outright (first open, or an explicit re-initialisation)."""
        ...

    async def has_rows(self) -> bool:
        ...

    async def export_rows(self, tenant_id: str, *, after_seq: int = 0, limit: int = 500) -> list[AuditRecord]:
        """The tenant's rows with `seq > after_seq`, oldest first, at most `limit`, whole (user id
        and fingerprint included): what `migrate` carries to another state."""
        ...

    async def import_rows(self, rows: Sequence[AuditRecord], origin: str) -> int:
        """Append rows carried from the state `origin`, each keeping its time, actor, session,
        action, ids and detail, with `detail["carried"] = {"from": origin, "seq": its seq there}`
        (`common.carried_detail`). Exactly once per (tenant, origin, origin seq), enforced in the
        same transaction as the insert: a row already carried is skipped, so a re-run after a kill
        adds only what is missing. Return how many were appended."""
        ...


@runtime_checkable
class GrantRepository(Protocol):
    async def add(self, grant: Grant) -> None: ...

    async def get(self, grant_id: str) -> Grant | None: ...

    async def for_grantee(self, tenant_id: str, user_id: str) -> list[Grant]: ...

    async def revoke(self, grant_id: str, at: float) -> bool: ...

    async def purge_grantee(self, tenant_id: str, user_id: str) -> int: ...

    async def for_tenant(self, tenant_id: str, *, limit: int = 1000) -> list[Grant]:
        """Every grant of one tenant (active or not), newest first, at most `limit`: the tenant
        admin's "grants in force" view (the policy filters; the store only lists)."""
        ...


@runtime_checkable
class ManifestRepository(Protocol):
    async def add(self, manifest: InjectionManifest) -> None: ...

    async def get(self, manifest_id: str) -> InjectionManifest | None: ...

    async def chain(self, manifest: InjectionManifest) -> list[InjectionManifest]:
        """The manifests `manifest` derives from, nearest first. A source that no longer exists
        ends the list early; the policy sees the dangling `parent_manifest_id` and fails closed."""
        ...

    async def revoke_tree(self, manifest_id: str, at: float) -> int:
        """Revoke `manifest_id` and every manifest derived from it; return how many."""
        ...

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        """Remove forgotten memories from the manifests that hold them (an index, not a scan)."""
        ...

    async def purge_user(self, tenant_id: str, user_id: str) -> int: ...

    async def purge_expired(self, now: float, limit: int = 1000) -> int: ...

    async def count_active(self, tenant_id: str, user_id: str, now: float) -> int: ...

    async def live_for_tenant(self, tenant_id: str, now: float, *, memory_id: str | None = None, limit: int = 1000) -> list[InjectionManifest]:
        """Unrevoked, unexpired manifests of one tenant, newest first, at most `limit`; with
        `memory_id`, only those holding it (an index, not a scan). Their chain is the caller's to check."""
        ...


@runtime_checkable
class BridgeState(Protocol):
    """The repositories of one deployment, opened and closed together."""

    audit: AuditLog
    grants: GrantRepository
    manifests: ManifestRepository
    shares: ShareRepository  # visible_to beyond the owning agent (ShareRepository above)
    teams: TeamRepository  # team -> member agents
    usage: UsageLedger  # storage-quota counters

    def bound_store_id(self) -> str | None:
        """The memory store this state's audit log describes (None: not bound yet), read
        synchronously, since opening a store needs it before any event loop runs."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ShareRepository(Protocol):
    async def set_audience(self, scope: ScopeKey, memory_id: str, audience: frozenset[str], at: float) -> None:
        """Replace the audience of one memory (an empty set removes its share) in one transaction."""
        ...

    async def audience_of(self, scope: ScopeKey, memory_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        """The stored audience of each of these memories of `scope` (absent: not shared)."""
        ...

    async def shared_with(self, tenant_id: str, user_id: str, agent_id: str) -> dict[ScopeKey, frozenset[str]]:
        """Memory ids by scope that `agent_id` (or every agent, `"*"`) of this user may read."""
        ...

    async def for_reader(self, tenant_id: str, user_id: str, agent_id: str) -> ReaderSharing:
        """`shared_with` and the teams of `agent_id` (`TeamRepository.teams_of`) in ONE read: every
        recall asks both, and shares and team members are one component of the store (one file,
        one schema), so a database state answers them in one round trip."""
        ...

    async def purge_memory_ids(self, memory_ids: set[str]) -> int:
        """Forgotten memories lose their shares (a re-created id must not inherit an audience)."""
        ...

    async def purge_user(self, tenant_id: str, user_id: str) -> int: ...

    async def of_tenant(self, tenant_id: str) -> list[Share]:
        """Every share of one tenant, ordered by scope and memory id (what `migrate` carries)."""
        ...


@runtime_checkable
class TeamRepository(Protocol):
    async def set_members(self, tenant_id: str, team_id: str, agent_ids: frozenset[str]) -> None:
        """Replace a team's members in one transaction (an empty set dissolves the team)."""
        ...

    async def add_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool: ...

    async def remove_member(self, tenant_id: str, team_id: str, agent_id: str) -> bool: ...

    async def members(self, tenant_id: str, team_id: str) -> frozenset[str]: ...

    async def teams_of(self, tenant_id: str, agent_id: str) -> frozenset[str]: ...

    async def knows_agent(self, tenant_id: str, agent_id: str) -> bool:
        """Whether any team of the tenant lists this agent."""
        ...

    async def has_teams(self, tenant_id: str) -> bool: ...

    async def of_tenant(self, tenant_id: str) -> dict[str, frozenset[str]]:
        """Every team of one tenant with its members (what `migrate` carries)."""
        ...


TENANT_ROW = ""


@runtime_checkable
class UsageLedger(Protocol):
    async def reserve(self, tenant_id: str, user_id: str, need: Usage, tenant: QuotaLimits, user: QuotaLimits) -> None:
        """Add `need` to the tenant's and the user's counters if both stay within their limits;
        otherwise raise `QuotaExceeded` and change nothing."""
        ...

    async def release(self, tenant_id: str, user_id: str, freed: Usage) -> None: ...

    async def usage(self, tenant_id: str, user_id: str = TENANT_ROW) -> Usage: ...

    async def of_tenant(self, tenant_id: str) -> dict[str, Usage]:
        """Every counter row of one tenant by user id (the tenant's own row under `TENANT_ROW`)."""
        ...
