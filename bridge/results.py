"""Every result the bridge answers with, in one place (pydantic models, so they serialise the same
for the HTTP service, MCP, the CLI and the LangGraph door; plain dataclasses on the hot recall
path). Doors import results from here, never from a handler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.base import StoredMemory
from adapters.frozen import quick_init
from adapters.scopes import ScopeKey
from bridge.policy.reads import Reader
from bridge.roles.planner import ManifestPlan
from bridge.roles.router import Route
from bridge.state.records import InjectDepth, InjectionManifest
from bridge.vocabulary import RESERVED_METADATA_PREFIX


@dataclass(frozen=True, slots=True)
class MemoryRef:
    """Where a memory is: its scope (string form, e.g. `acme/ws/alpha`) and its id there."""

    scope: str
    memory_id: str


@quick_init  # a recall builds ~25: half the frozen __init__'s cost (adapters/frozen.py)
@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One recalled memory with its provenance. A plain dataclass because a recall builds dozens
    of them on the hot path; pydantic still serialises them inside `RecallResult`."""

    memory_id: str
    scope: str
    visibility: str
    kind: str
    content: str
    score: float
    why_visible: str  # the reason the policy (or a grant, or a manifest) made this readable
    author: str  # user@agent that wrote it
    status: str
    grant_id: str | None = None
    injected_by: str | None = None
    derived_from: tuple[str, ...] = ()
    conflicts_with: tuple[MemoryRef, ...] = ()
    duplicates: tuple[MemoryRef, ...] = ()
    expires_at: float | None = None  # epoch seconds; None: never expires
    #: seed 000 section 3 (bridge/policy/sharing.py): team / private / injected, and which
    #: agents read it (`("*",)`: the whole audience of its scope)
    memory_type: str = "private"
    visible_to: tuple[str, ...] = ("*",)

    @property
    def ref(self) -> MemoryRef:
        return MemoryRef(scope=self.scope, memory_id=self.memory_id)


class RecallResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    identity: str
    purpose: str
    query: str
    items: tuple[RecalledMemory, ...]
    context: str  # the rendered block to inject into a prompt
    tokens_used: int
    scopes_searched: tuple[str, ...]
    partial: bool = False  # true only if the caller allowed partial results and a scope failed
    failed_scopes: tuple[str, ...] = ()
    guard_alarms: int = 0
    #: expired hits the guard dropped because the backend cannot exclude them in its own query
    #: (`Capabilities.expiry_in_query=False`); logged too — never a silent drop
    expired_dropped: int = 0
    #: the seq of this recall's audit row; None when the state group-commits read rows and the
    #: row is still queued (bridge/state/read_rows.py: committed within 50 ms)
    audit_seq: int | None = None

    @classmethod
    def of_stages(
        cls, identity: str, purpose: str, query: str, items: tuple[RecalledMemory, ...], context: str, tokens_used: int,
        scopes_searched: tuple[str, ...], partial: bool, failed_scopes: tuple[str, ...], guard_alarms: int,
        expired_dropped: int, audit_seq: int | None,
    ) -> "RecallResult":
        """The model `model_construct` builds from every field (no validation: the recall stages
        built each value from validated records), set directly: model_construct walks every
        field's aliases and defaults first, about 9 us of a recall's CPU against 2 us.
        tests/bridge/test_recall_stages_reference.py checks that both build the same object."""
        m = cls.__new__(cls)
        _set_attr(m, "__dict__", {
            "identity": identity, "purpose": purpose, "query": query, "items": items, "context": context,
            "tokens_used": tokens_used, "scopes_searched": scopes_searched, "partial": partial,
            "failed_scopes": failed_scopes, "guard_alarms": guard_alarms, "expired_dropped": expired_dropped,
            "audit_seq": audit_seq,
        })
        _set_attr(m, "__pydantic_fields_set__", set(_RECALL_RESULT_FIELDS))
        _set_attr(m, "__pydantic_extra__", None)
        _set_attr(m, "__pydantic_private__", None)
        return m


_set_attr = object.__setattr__
_RECALL_RESULT_FIELDS = tuple(RecallResult.model_fields)


class WriteResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    memory_id: str
    scope: str
    visibility: str
    kind: str
    status: str
    reason: str
    deduplicated: bool = False  # an idempotent retry returned the memory written before
    expires_at: float | None = None  # epoch seconds after which it is never recalled (None: never)
    memory_type: str = "private"  # seed 000: team / private (bridge/policy/sharing.py)
    visible_to: tuple[str, ...] = ("*",)

    @property
    def ref(self) -> MemoryRef:
        return MemoryRef(scope=self.scope, memory_id=self.memory_id)


class Message(BaseModel):
    """A conversation message for `capture`. Its text is data: it never changes who is asking."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(pattern=r"^(user|assistant|system)$")
    content: str
    message_id: str | None = Field(default=None, min_length=1, max_length=128)


class CaptureResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    written: tuple[WriteResult, ...]
    skipped: int  # messages that yielded no memory
    backend_session_id: str | None = None  # set when the backend extracts server-side


@dataclass(frozen=True)
class FederatedManifest:
    """What a coordinator turn produced: the manifest, and how it was chosen."""

    manifest: InjectionManifest
    route: Route
    plan: ManifestPlan
    depth: InjectDepth
    carried: tuple[tuple[ScopeKey, str], ...] = ()

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return self.manifest.memory_ids

    def counts(self) -> dict[str, dict[str, int]]:
        return self.plan.counts


class ManifestSummary(BaseModel):
    """A live manifest as a tenant admin sees it: who handed what to whom, until when."""

    model_config = ConfigDict(frozen=True)

    manifest_id: str
    user_id: str
    parent_agent_id: str
    child_agent_id: str
    issuer: str
    task: str
    depth: str
    memory_count: int
    memory_ids: tuple[str, ...]
    may_reinject: bool
    parent_manifest_id: str | None = None
    created_at: float
    expires_at: float
    chain_live: bool  # False: a source it was re-injected from expired or was revoked (it reads nothing)


class ScopeCount(BaseModel):
    model_config = ConfigDict(frozen=True)

    scope: str
    visibility: str
    active: int = 0
    pending: int = 0
    superseded: int = 0
    capped: bool = False  # counting stopped at COUNT_CAP


class ReaderOut(BaseModel):
    model_config = ConfigDict(frozen=True)

    who: str
    why: str
    via: str
    until: float | None = None
    ref: str | None = None

    @classmethod
    def of(cls, r: Reader) -> "ReaderOut":
        return cls(who=r.who, why=r.why, via=r.via, until=r.until, ref=r.ref)


class MemoryReaders(BaseModel):
    """Who can read one memory and why (no content: the answer is about the memory's reach)."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    scope: str
    visibility: str
    kind: str
    status: str
    author: str
    readers: tuple[ReaderOut, ...]
    never: str
    complete: bool = True  # False: more grants or manifests exist than were weighed


class PurgeReport(BaseModel):
    """What one purge run did: how many expired memories it deleted, over how many scopes, and
    whether the tenant holds no more expired memories (`complete`)."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    purged: int
    scopes_scanned: int
    complete: bool
    memory_ids: tuple[str, ...] = ()


class MemoryRecord(BaseModel):
    """One stored memory as a reader sees it (the bridge's `vb.` bookkeeping keys left out)."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    scope: str
    visibility: str
    kind: str
    content: str
    status: str
    confidence: float
    author: str  # user@agent that wrote it
    derived_from: tuple[str, ...] = ()
    metadata: dict[str, Any] = {}
    created_at: float
    updated_at: float
    why_visible: str = ""
    expires_at: float | None = None  # epoch seconds; None: never expires

    @classmethod
    def of(cls, memory: StoredMemory, why_visible: str = "") -> "MemoryRecord":
        p = memory.provenance
        return cls(
            memory_id=memory.id, scope=str(memory.scope), visibility=memory.scope.visibility.value, kind=memory.kind,
            content=memory.content, status=memory.status.value, confidence=memory.confidence,
            author=f"{p.author_user_id}@{p.author_agent_id}", derived_from=tuple(p.derived_from),
            metadata={k: v for k, v in memory.metadata.items() if not k.startswith(RESERVED_METADATA_PREFIX)},
            created_at=memory.created_at, updated_at=memory.updated_at, why_visible=why_visible, expires_at=memory.expires_at,
        )


class MemoryPage(BaseModel):
    model_config = ConfigDict(frozen=True)

    memories: tuple[MemoryRecord, ...]
    next_cursor: str | None = None


class MemoryChange(BaseModel):
    """One change to a memory, from the audit log: who (user@agent of a tenant), what (the
    action and, for an edit, the fields it changed, never their values), when (epoch seconds)."""

    model_config = ConfigDict(frozen=True)

    seq: int
    ts: float
    actor: str
    action: str
    detail: dict[str, Any] = {}


class MemoryHistory(BaseModel):
    """A memory's edit history, newest change first."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    scope: str
    changes: tuple[MemoryChange, ...]


class InjectedContext(BaseModel):
    """Seed 000's inject-context answer: the manifest, its memories and the rendered block."""

    model_config = ConfigDict(frozen=True)

    manifest_id: str
    child_agent_id: str
    task: str
    depth: str
    expires_at: float
    source: str  # "injected_by_<parent agent>", as seed 000 shows it
    memories: tuple[MemoryRecord, ...]
    context: str
    may_reinject: bool = False
    parent_manifest_id: str | None = None
    created_at: float = 0.0


class ShareResult(BaseModel):
    """A memory's audience after a change of `visible_to`."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    scope: str
    memory_type: str
    visible_to: tuple[str, ...]


class TeamResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    team_id: str
    members: tuple[str, ...]


class ApiKeyOut(BaseModel):
    """One API key of a tenant as its admin sees it: the binding and status, never the secret."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    user_id: str
    agent_id: str
    department_ids: tuple[str, ...] = ()
    workspace_id: str | None = None
    roles: tuple[str, ...] = ()
    label: str = ""
    created_at: float
    revoked_at: float | None = None


class IssuedApiKeyOut(BaseModel):
    """A newly issued key: `key` is the only copy of its secret (shown once, stored nowhere)."""

    model_config = ConfigDict(frozen=True)

    key: str
    record: ApiKeyOut


class DirectoryUser(BaseModel):
    model_config = ConfigDict(frozen=True)

    user_id: str
    agents: tuple[str, ...] = ()  # agents seen for this user: its keys' and its audit rows'
    roles: tuple[str, ...] = ()  # roles on its active keys (a JWT's roles are known only per request)
    department_ids: tuple[str, ...] = ()
    workspace_ids: tuple[str, ...] = ()
    active_keys: int = 0
    last_seen: float | None = None  # newest audit row of this user among those read


class DirectoryTeam(BaseModel):
    model_config = ConfigDict(frozen=True)

    team_id: str
    members: tuple[str, ...] = ()  # agent ids


class TenantDirectoryOut(BaseModel):
    """Who the bridge knows in a tenant: users (from keys and audit actors) and teams."""

    model_config = ConfigDict(frozen=True)

    users: tuple[DirectoryUser, ...] = ()
    teams: tuple[DirectoryTeam, ...] = ()
    audit_rows_read: int = 0  # how many of the newest audit rows the actors were taken from
