"""The MCP tools: one strict argument model per tool, its description, and the operation it runs.

Each argument model forbids unknown fields (`additionalProperties: false` in the JSON schema a
host shows the model, and the same model validates every call), and none has a field naming a
user, tenant or agent of the *caller*: a call that adds `user_id`, `tenant_id`, `agent_id`,
`roles`, ... is refused as malformed, never honoured and never silently dropped (a model that
believes it switched users must learn it did not). The agent ids a tool takes name
TARGETS, never the caller: `inject_context.child_agent` (the child agent of the caller's own user,
checked like the service's `agent_id` of POST /api/v1/inject-context) and `remember.visible_to`
(agents of the caller's own user a private memory is shared with); `remember.team_id` names a
team. The policy decides each (bridge/policy/sharing.py). Operations are built by keyword, so a
field added to an operation can never shift another into the wrong place.

What this module must never do: decide a permission, or build an identity. It builds operations;
`MemoryBridge.execute` and the policy do the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.scopes import ScopeKey
from bridge import operations as ops
from bridge.operations import reads
from bridge.facade import MemoryBridge
from identity.model import MemoryIdentity

__all__ = ["TOOLS", "McpTool", "IDENTITY_NOTE"]

IDENTITY_NOTE = (
    "Who you are (user, tenant, agent, roles) comes only from the credential this server was started or "
    "called with; it is never a parameter, and a call that passes one is refused."
)
KINDS = Literal["profile", "preference", "event", "fact", "decision", "procedure", "experience", "standard", "note"]
VISIBILITIES = Literal["private", "agent", "workspace", "department", "tenant", "global", "team", "task"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class RememberArgs(_Args):
    content: str = Field(min_length=1, description="The memory, as one self-contained statement.")
    kind: KINDS = Field(description="What it is: a preference, a fact, a decision, ...")
    visibility: VISIBILITIES | None = Field(None, description="Who may read it; default by kind (preferences private, decisions workspace). Shared scopes may need approval.")
    department_id: str | None = Field(None, description="For visibility=department: one of your own departments.")
    idempotency_key: str | None = Field(None, description="Retry-safe key: the same key stores the memory once.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form JSON metadata; it never changes who wrote the memory or where it lands.")
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    memory_type: Literal["team", "private"] | None = Field(
        None, description="Seed 000: 'team' writes the memory of team_id (only its members may); 'private' your own agent's. "
        "Default: as the policy decides for the kind. ('injected' is made by inject_context, never written.)")
    visible_to: list[str] | None = Field(
        None, min_length=1, description="Share a private memory with these TARGET agents of your own user (agent ids, or [\"*\"] for all of "
        "them); it never names who you are, and the policy decides whether you may share.")
    team_id: str | None = Field(None, min_length=1, description="With memory_type=team: the team whose memory this is; the policy checks you are a member.")
    expires_at: float | None = Field(None, strict=True, description="Epoch seconds after which the memory is never recalled and is purged. At most one of expires_at, ttl_s.")
    ttl_s: float | None = Field(None, gt=0, strict=True, description="Seconds from now (the bridge's clock) until the memory expires. At most one of expires_at, ttl_s.")


class RecallArgs(_Args):
    query: str = Field(min_length=1, description="What you need to know, in natural language.")
    purpose: Literal["chat", "coding"] = "chat"
    budget_tokens: int | None = Field(None, ge=1, description="Token budget of the rendered context.")
    kinds: list[KINDS] | None = Field(None, description="Only these kinds of memory.")
    include_scopes: list[str] = Field(default_factory=list, description="Extra scopes (e.g. acme/dept/eng) to search; only honoured through a grant a tenant admin issued to you.")
    manifest_id: str | None = Field(None, description="A child agent: the manifest its parent injected.")
    allow_partial: bool = Field(False, description="Return what was found when a scope fails, flagged partial (default: fail).")
    min_score: float | None = Field(None, ge=0.0, le=1.0)
    only_scopes: list[str] | None = Field(
        None, min_length=1, description="Search exactly these scopes (as recall prints them), each one you may already read; it narrows, never widens.")


class ForgetArgs(_Args):
    scope: str = Field(min_length=1, description="The memory's scope exactly as recall printed it.")
    memory_id: str = Field(min_length=1)


class MemoryRefArg(_Args):
    scope: str = Field(min_length=1)
    memory_id: str = Field(min_length=1)


class InjectContextArgs(_Args):
    child_agent: str = Field(min_length=1, description="The TARGET child agent (of your own user) that gets the context; never yourself.")
    task: str = Field(min_length=1, description="The child's task: relevant memories are chosen for it.")
    depth: Literal["minimal", "standard", "full"] = "standard"
    memory_refs: list[MemoryRefArg] | None = Field(None, description="Exactly these memories ([{scope, memory_id}]) instead of a search.")
    from_manifest_id: str | None = Field(None, description="Re-inject from a manifest you were given (if it allows re-injection).")
    ttl_seconds: float = Field(3600.0, gt=0, le=7 * 86400)
    may_reinject: bool = False


class WriteBackArgs(_Args):
    manifest_id: str = Field(min_length=1, description="The manifest your parent injected; the result is linked to its memories.")
    content: str = Field(min_length=1)
    kind: KINDS
    visibility: VISIBILITIES | None = None
    idempotency_key: str | None = None


class ListMemoriesArgs(_Args):
    scope: str | None = Field(None, description="A scope you may read (as recall prints scopes); default: your private scope.")
    status: Literal["active", "pending", "superseded"] = "active"
    cursor: str | None = Field(None, description="next_cursor of the previous page.")
    limit: int = Field(50, ge=1, le=500)


def _refs(refs: list[MemoryRefArg] | None) -> list[tuple[str, str]] | None:
    return None if refs is None else [(r.scope, r.memory_id) for r in refs]


async def _remember(b: MemoryBridge, who: MemoryIdentity, a: RememberArgs) -> dict[str, Any]:
    op = ops.Remember(content=a.content, kind=a.kind, visibility=a.visibility, department_id=a.department_id,
                      idempotency_key=a.idempotency_key, metadata=a.metadata, confidence=a.confidence, memory_type=a.memory_type,
                      visible_to=None if a.visible_to is None else tuple(a.visible_to), team_id=a.team_id, expires_at=a.expires_at, ttl_s=a.ttl_s)
    return (await b.execute(who, op)).model_dump(mode="json")


async def _recall(b: MemoryBridge, who: MemoryIdentity, a: RecallArgs) -> dict[str, Any]:
    op = ops.Recall(query=a.query, purpose=a.purpose, budget_tokens=a.budget_tokens, kinds=a.kinds, include_scopes=a.include_scopes,
                    manifest_id=a.manifest_id, allow_partial=a.allow_partial, min_score=a.min_score,
                    only_scopes=None if a.only_scopes is None else tuple(a.only_scopes))
    body = (await b.execute(who, op)).model_dump(mode="json", exclude={"query", "audit_seq"})
    body["memories"] = body.pop("items")
    return body


async def _forget(b: MemoryBridge, who: MemoryIdentity, a: ForgetArgs) -> dict[str, Any]:
    return {"deleted": bool(await b.execute(who, ops.Forget(ref=(a.scope, a.memory_id))))}


async def _inject_context(b: MemoryBridge, who: MemoryIdentity, a: InjectContextArgs) -> dict[str, Any]:
    inject = ops.Inject(child_agent_id=a.child_agent, task=a.task, depth=a.depth, memory_refs=_refs(a.memory_refs),
                        from_manifest_id=a.from_manifest_id, ttl_seconds=a.ttl_seconds, may_reinject=a.may_reinject)
    return (await b.execute(who, reads.InjectContext(inject=inject))).model_dump(mode="json")


async def _write_back(b: MemoryBridge, who: MemoryIdentity, a: WriteBackArgs) -> dict[str, Any]:
    op = ops.WriteBack(manifest_id=a.manifest_id, content=a.content, kind=a.kind, visibility=a.visibility,
                       idempotency_key=a.idempotency_key)
    return (await b.execute(who, op)).model_dump(mode="json")


async def _list_memories(b: MemoryBridge, who: MemoryIdentity, a: ListMemoriesArgs) -> dict[str, Any]:
    scope = a.scope if a.scope is not None else ScopeKey.private(who.tenant_id, who.user_id)
    page = await b.execute(who, reads.ListMemories(scope=scope, cursor=a.cursor, limit=a.limit, status=a.status))
    return page.model_dump(mode="json")


@dataclass(frozen=True)
class McpTool:
    name: str
    title: str
    description: str
    args: type[_Args]
    run: Callable[[MemoryBridge, MemoryIdentity, Any], Awaitable[dict[str, Any]]]
    read_only: bool = False
    destructive: bool = False

    def input_schema(self) -> dict[str, Any]:
        schema = self.args.model_json_schema()
        schema.pop("title", None)
        assert schema.get("additionalProperties") is False  # noqa: S101 - extra="forbid" is the contract of every tool
        return schema


TOOLS: dict[str, McpTool] = {t.name: t for t in (
    McpTool("remember", "Remember", "Store one memory for later recall. It lands in the scope the policy decides for its kind and "
            "visibility (shared scopes may wait for approval); the result says where and why. memory_type/team_id write team memory (members "
            "only); visible_to shares a private memory with TARGET agents of your own user; expires_at/ttl_s make it expire. The policy "
            "decides each of these, none names you. " + IDENTITY_NOTE, RememberArgs, _remember),
    McpTool("recall", "Recall", "Search the memories you may read and return `context` (a rendered block, every item labelled with its "
            "source scope, author and why it is visible, ready for a prompt) plus the `memories` themselves. Memories you may not read "
            "are never candidates. " + IDENTITY_NOTE, RecallArgs, _recall, read_only=True),
    McpTool("forget", "Forget", "Delete one memory you may delete, by the scope and memory_id recall printed. " + IDENTITY_NOTE,
            ForgetArgs, _forget, destructive=True),
    McpTool("inject_context", "Inject context into a child agent", "As a parent agent, hand a child agent (of your own user) a "
            "manifest of memories for one task, returned with their rendered context; the child reads them read-only, labelled "
            "injected_by. " + IDENTITY_NOTE, InjectContextArgs, _inject_context),
    McpTool("write_back", "Write back a child's result", "As a child agent, store a result derived from the memories your parent "
            "injected (linked to them as derived_from). " + IDENTITY_NOTE, WriteBackArgs, _write_back),
    McpTool("list_memories", "List memories", "One page of the memories of a scope you may read (default: your private scope); pass "
            "next_cursor back for the next page. " + IDENTITY_NOTE, ListMemoriesArgs, _list_memories, read_only=True),
)}
