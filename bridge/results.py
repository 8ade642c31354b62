"""The public results of the bridge (pydantic, so they serialise for the HTTP service and CLI)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from adapters.scopes import ScopeKey
from bridge.roles.planner import ManifestPlan
from bridge.roles.router import Route
from bridge.state.records import InjectDepth, InjectionManifest


@dataclass(frozen=True, slots=True)
class MemoryRef:
    """Where a memory is: its scope (string form, e.g. `acme/ws/alpha`) and its id there."""

    scope: str
    memory_id: str


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
    audit_seq: int | None = None


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
