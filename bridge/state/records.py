"""The records the bridge keeps about itself: grants, injection manifests, audit events.

Plain frozen data, shared by the policy (which decides from them), the state repositories (which
store them) and the facade (which returns them). Nothing here decides or stores anything.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from adapters.scopes import ScopeKey

__all__ = ["Grant", "InjectDepth", "InjectionManifest", "AuditEvent", "AuditRecord", "AuditView", "Share", "AUDIT_ACTIONS", "READ_ACTIONS"]

#: Every action an audit row may record. `denied` = a refused attempt (security data too);
#: `recovered` = a write a crash left unaudited, found and audited at the next open;
#: `quarantine` = a damaged record the backend took out of service; `migrate` = an operator's
#: copy of a tenant's memories between backends (bridge/migrate); `export` = a caller took their
#: exportable memories out (bridge/migrate/jsonl.py); `inspect` = an admin or approver looked at
#: memories through an administrative view (the approval queue, "who can read", the console's
#: browser): on the record like every read, but not a `recall`, which is an agent's retrieval.
AUDIT_ACTIONS = frozenset({
    "write", "recall", "forget", "forget_subject", "approve", "promote", "grant", "revoke", "inject",
    "guard_alarm", "capture", "denied", "recovered", "quarantine", "edit", "reject", "migrate", "export",
    "share", "team",  # a memory's visible_to changed; a team's membership changed
    "expired",  # the purge deleted an expired memory
    "inspect",  # an administrative view of memories (ids only on the row)
    "api_key",  # a tenant admin issued or revoked an API key (its id, never the secret)
})
#: Rows of reads are committed without waiting for the disk unless configured (bridge/state/sqlite/__init__.py).
READ_ACTIONS = frozenset({"recall", "inspect"})
#: Actions whose row says a memory was stored (the write path's `plan.action`s). A memory is
#: audited as stored exactly once: by one of these rows, or by a `recovered` row whose
#: `operation` is one of them (bridge/state/*: `append_stored`, `recover_intent`).
STORING_ACTIONS = frozenset({"write", "promote"})


@dataclass(frozen=True)
class Grant:
    """An explicit, expiring permission for one user (optionally one agent) to read one scope."""

    grant_id: str
    tenant_id: str
    grantee_user_id: str
    grantee_agent_id: str | None
    scope: ScopeKey
    issued_by: str
    reason: str
    issued_at: float
    expires_at: float
    revoked_at: float | None = None

    def active(self, now: float) -> bool:
        return self.revoked_at is None and now < self.expires_at


class InjectDepth(str, enum.Enum):
    """How much of the parent's readable memory a search-built manifest carries."""

    MINIMAL = "minimal"
    STANDARD = "standard"
    FULL = "full"

    @property
    def limit(self) -> int:
        return {"minimal": 3, "standard": 8, "full": 20}[self.value]


@dataclass(frozen=True)
class InjectionManifest:
    """Exactly the memories a parent agent handed a child agent for one task, read-only.

    `parent_manifest_id` is set for a re-injection: the manifest this one was derived from.
    A manifest is usable only while it and every manifest above it are unexpired and unrevoked.
    """

    manifest_id: str
    tenant_id: str
    user_id: str
    parent_agent_id: str
    child_agent_id: str
    task: str
    depth: InjectDepth
    entries: tuple[tuple[ScopeKey, str], ...]  # (scope, memory id)
    may_reinject: bool
    created_at: float
    expires_at: float
    parent_manifest_id: str | None = None
    revoked_at: float | None = None

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(mid for _, mid in self.entries)

    @property
    def issuer(self) -> str:
        """`user@agent` of the parent that issued it, as labels show it."""
        return f"{self.user_id}@{self.parent_agent_id}"

    def by_scope(self) -> dict[ScopeKey, frozenset[str]]:
        out: dict[ScopeKey, set[str]] = {}
        for key, mid in self.entries:
            out.setdefault(key, set()).add(mid)
        return {k: frozenset(v) for k, v in out.items()}

    def usable(self, now: float) -> bool:
        return self.revoked_at is None and now < self.expires_at


@dataclass(frozen=True)
class AuditEvent:
    seq: int
    ts: float
    tenant_id: str
    actor: str
    session_id: str
    action: str
    memory_ids: tuple[str, ...]
    scopes: tuple[str, ...]
    grant_ids: tuple[str, ...]
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditRecord:
    """One audit row whole, as a migration moves it between states: the event plus the two
    columns a reader's view filters on but `AuditEvent` leaves out (whose row it is)."""

    event: AuditEvent
    user_id: str
    actor_fingerprint: str


@dataclass(frozen=True)
class AuditView:
    """Which audit rows a reader may see, as the policy decided: one tenant, and one user's
    rows only unless the reader administers the tenant."""

    tenant_id: str
    user_id: str | None  # None: every row of the tenant


@dataclass(frozen=True)
class Share:
    """The extra audience of one memory, beyond the agent that owns the scope."""

    scope: ScopeKey
    memory_id: str
    audience: frozenset[str]
    shared_at: float = 0.0  # when the audience was last set (a migration keeps it)


@dataclass(frozen=True, slots=True)
class ReaderSharing:
    """What sharing adds to one reader's recall: the memories shared with it (ids by scope, as
    `ShareRepository.shared_with`) and the teams its agent belongs to (as `TeamRepository.teams_of`)."""

    shared: Mapping[ScopeKey, frozenset[str]]  # read-only: a store may hand the same one to many recalls
    teams: frozenset[str]


@dataclass(frozen=True)
class QuotaLimits:
    """At most `max_memories` memories and `max_bytes` content bytes (None: unlimited)."""

    max_memories: int | None = None
    max_bytes: int | None = None

    @property
    def limited(self) -> bool:
        return self.max_memories is not None or self.max_bytes is not None


@dataclass(frozen=True)
class Usage:
    """What a tenant or a user holds (or a write needs): memories and content bytes."""

    memories: int = 0
    bytes: int = 0
