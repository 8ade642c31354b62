"""The public results of the bridge (pydantic, so they serialise for the HTTP service and CLI)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MemoryRef(BaseModel):
    """Where a memory is: its scope (string form, e.g. `acme/ws/alpha`) and its id there."""

    model_config = ConfigDict(frozen=True)

    scope: str
    memory_id: str


class RecalledMemory(BaseModel):
    model_config = ConfigDict(frozen=True)

    memory_id: str
    scope: str
    visibility: str
    kind: str
    content: str
    score: float
    why_visible: str  # the reason the policy (or a grant, or a manifest) made this readable
    grant_id: str | None = None
    author: str  # user@agent that wrote it
    injected_by: str | None = None
    derived_from: tuple[str, ...] = ()
    status: str
    conflicts_with: tuple[MemoryRef, ...] = ()
    duplicates: tuple[MemoryRef, ...] = ()

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

    @property
    def ref(self) -> MemoryRef:
        return MemoryRef(scope=self.scope, memory_id=self.memory_id)


class Message(BaseModel):
    """A conversation message for `capture`. Its text is data: it never changes who is asking."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(pattern=r"^(user|assistant|system)$")
    content: str
    message_id: str | None = None


class CaptureResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    written: tuple[WriteResult, ...]
    skipped: int  # messages that yielded no memory
    backend_session_id: str | None = None  # set when the backend extracts server-side
