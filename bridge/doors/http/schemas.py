"""Request and response models of the HTTP API. None of them can name the caller.

Fields that *look* like identity (seed 000's `agent_id`, `user_id`, `team_id`) are declared as
`CallerField`s: they are assertions about the authenticated caller, accepted only when equal to
it (a client may state what it believes it is; it cannot choose) — else 403. Fields naming a
*target* (inject-context's `agent_id`: the child; a grant's grantee) go into the operation and
the policy decides. Every body model forbids unknown fields (422), so `tenant_id`, `roles` or
`session_id` in a body are refused, not ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bridge.results import CaptureResult, Message, RecalledMemory, WriteResult

__all__ = [
    "CALLER_AGENT", "CALLER_USER", "CALLER_TEAM", "Body", "CaptureRequest", "RecallRequest", "RememberRequest", "WriteBackRequest",
    "InjectRequest", "PromoteRequest", "EditRequest", "ForgetSubjectRequest", "GrantRequest", "ForkRequest", "RefModel",
    "RecallResponse", "GrantOut", "ManifestOut", "AuditOut", "SessionOut", "Deleted", "CountOut", "Health",
    "WriteResult", "CaptureResult",
]

CALLER_AGENT = "Optional assertion: the authenticated caller's agent id. Accepted only when equal to it (identity comes from the credential); anything else is 403."
CALLER_USER = "Optional assertion: the authenticated caller's user id. Accepted only when equal to it; anything else is 403."
CALLER_TEAM = "Optional assertion: the caller's team, i.e. the workspace its credential names. Accepted only when equal; else 403."
#: team_id on a write narrows it to a team (team memory) the caller's agent belongs to.
TEAM_FIELD = (
    "Optional: the caller's team. Accepted only when equal to the workspace its credential names (an assertion) or to a team "
    "the caller's agent is a member of (the memories then are that team's memory); anything else is 403. With memory_type "
    "'team' it always names a team."
)
MEMORY_TYPE = "Seed 000: 'team' (team memory, members only) or 'private' (the agent's own memory; its task's, if the credential names one)."
VISIBLE_TO = "Seed 000: agents of the same user that may read a private memory (['*']: all of them). Never widens to other users or tenants."
MemoryTypeName = Literal["team", "private"]
Kind = Literal["profile", "preference", "event", "fact", "decision", "procedure", "experience", "standard", "note"]
VisibilityName = Literal["private", "agent", "workspace", "department", "tenant", "global", "team", "task"]
Depth = Literal["minimal", "standard", "full"]
Purpose = Literal["chat", "coding"]
ScopeText = Field(min_length=1, max_length=400, description="A scope key such as 'acme/ws/alpha', 'acme/user/u17', 'global'.")
IdText = Field(min_length=1, max_length=128)


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RefModel(Body):
    scope: str = ScopeText
    memory_id: str = IdText


class CaptureRequest(Body):
    """Seed 000's capture. `content` is the calling agent's own memory, stored whole as given:
    private to that agent (visible_to [agent_id]) unless memory_type / visible_to / team_id say
    otherwise. `messages` is a conversation the bridge extracts memories from, routed by seed
    003's write rules (preferences -> the user, project facts and decisions -> the workspace,
    department standards -> pending approval, agent experience -> the agent)."""

    messages: list[Message] | None = Field(None, max_length=10_000, description="Conversation messages (role user/assistant/system).")
    content: str | None = Field(None, min_length=1, description="The calling agent's own memory, stored whole (seed 000): private to it by default.")
    idempotency_key: str | None = Field(None, min_length=1, max_length=128, description="Retries with the same key never duplicate a memory.")
    expires_at: float | None = Field(None, strict=True, description="Epoch seconds after which every extracted memory expires. At most one of expires_at / ttl_s.")
    ttl_s: float | None = Field(None, gt=0, strict=True, description="Seconds from now until every extracted memory expires.")
    agent_id: str | None = Field(None, description=CALLER_AGENT)
    user_id: str | None = Field(None, description=CALLER_USER)
    team_id: str | None = Field(None, description=TEAM_FIELD)
    memory_type: MemoryTypeName | None = Field(None, description=MEMORY_TYPE)
    visible_to: list[str] | None = Field(None, min_length=1, max_length=64, description=VISIBLE_TO)


class RecallRequest(Body):
    query: str = Field(min_length=1, description="What to recall. Never logged.")
    purpose: Purpose = "chat"
    budget_tokens: int | None = Field(None, ge=1, le=1_000_000)
    kinds: list[Kind] | None = Field(None, min_length=1, max_length=16)
    include_scopes: list[str] = Field(default_factory=list, max_length=64, description="Extra scopes, each covered by an active grant.")
    manifest_id: str | None = Field(None, description="An injection manifest issued to the caller (a child agent).")
    allow_partial: bool = False
    min_score: float | None = Field(None, ge=0.0, le=1.0)
    agent_id: str | None = Field(None, description=CALLER_AGENT)
    user_id: str | None = Field(None, description=CALLER_USER)
    only_scopes: list[str] | None = Field(None, min_length=1, max_length=64, description="Narrow the recall to exactly these scopes, each already readable (default scope or active grant); never widens.")


class RememberRequest(Body):
    content: str = Field(min_length=1)
    kind: Kind
    visibility: VisibilityName | None = Field(None, description="Default by kind; the policy decides whether the caller may write there.")
    department_id: str | None = None
    idempotency_key: str | None = Field(None, min_length=1, max_length=128)
    metadata: dict[str, str | int | float | bool | None] = Field(default_factory=dict, description="Caller metadata; keys starting with 'vb.' are reserved.")
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    memory_type: MemoryTypeName | None = Field(None, description=MEMORY_TYPE)
    visible_to: list[str] | None = Field(None, min_length=1, max_length=64, description=VISIBLE_TO)
    team_id: str | None = Field(None, description=TEAM_FIELD)
    expires_at: float | None = Field(None, strict=True, description="Epoch seconds after which the memory is never recalled and is purged. At most one of expires_at / ttl_s.")
    ttl_s: float | None = Field(None, gt=0, strict=True, description="Seconds from now (the service's clock) until the memory expires.")


class WriteBackRequest(Body):
    manifest_id: str = Field(description="The manifest the caller (a child agent) worked under; the result's derived_from is its memory ids.")
    content: str = Field(min_length=1)
    kind: Kind
    visibility: VisibilityName | None = None
    idempotency_key: str | None = Field(None, min_length=1, max_length=128)
    metadata: dict[str, str | int | float | bool | None] = Field(default_factory=dict, description="Caller metadata (e.g. domain, tier); keys starting with 'vb.' are reserved.")


class InjectRequest(Body):
    agent_id: str = Field(description="TARGET: the child agent the manifest is for (same tenant and user). The policy decides; an agent can never inject into itself.")
    task: str = Field(min_length=1)
    depth: Depth = "standard"
    memory_refs: list[RefModel] | None = Field(None, max_length=1000, description="Exactly these memories (else: a search for the task).")
    from_manifest_id: str | None = Field(None, description="Re-inject from a manifest that allows it.")
    ttl_seconds: float = Field(3600, gt=0, le=7 * 86400)
    may_reinject: bool = False
    user_id: str | None = Field(None, description=CALLER_USER)


class PromoteRequest(Body):
    to: VisibilityName
    department_id: str | None = None


class EditRequest(Body):
    content: str | None = Field(None, min_length=1, description="New content; the memory keeps its id and is re-embedded.")
    metadata: dict[str, str | int | float | bool | None] | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)


class ForgetSubjectRequest(Body):
    subject_user_id: str = Field(description="TARGET: the user whose memories are erased (yourself, or any user of your tenant as its admin).")


class GrantRequest(Body):
    grantee_user_id: str = Field(description="TARGET: who may read the scope.")
    scope: str = ScopeText
    ttl_seconds: float = Field(gt=0, le=366 * 86400)
    reason: str = Field(min_length=1)
    grantee_agent_id: str | None = Field(None, description="TARGET: restrict the grant to one agent of the grantee.")


class ForkRequest(Body):
    parent_session_id: str | None = Field(None, description="Default: the session of this request.")


# -- responses ------------------------------------------------------------------------------
class RecallResponse(BaseModel):
    """Seed 000's recall answer: `memories` (each labelled with why it was visible and, if
    injected, `injected_by`) and the rendered `context`."""

    identity: str
    purpose: str
    memories: list[RecalledMemory]
    context: str
    tokens_used: int
    scopes_searched: list[str]
    partial: bool = False
    failed_scopes: list[str] = []
    guard_alarms: int = 0
    expired_dropped: int = Field(0, description="Expired hits the guard dropped because the backend cannot exclude expiry in its own query.")


class GrantOut(BaseModel):
    grant_id: str
    tenant_id: str
    grantee_user_id: str
    grantee_agent_id: str | None
    scope: str
    issued_by: str
    reason: str
    issued_at: float
    expires_at: float
    revoked_at: float | None = None


class ManifestOut(BaseModel):
    manifest_id: str
    child_agent_id: str
    parent_agent_id: str
    task: str
    depth: str
    memories: list[RefModel]
    expires_at: float
    may_reinject: bool
    parent_manifest_id: str | None = None


class AuditOut(BaseModel):
    seq: int
    ts: float
    tenant_id: str
    actor: str
    session_id: str
    action: str
    memory_ids: list[str]
    scopes: list[str]
    grant_ids: list[str]
    detail: dict[str, Any] = {}


class SessionOut(BaseModel):
    session_id: str
    principal: str


class Deleted(BaseModel):
    deleted: bool


class CountOut(BaseModel):
    count: int


class Health(BaseModel):
    status: str
    checks: dict[str, str] = {}
