"""What every route shares: the authenticated identity, the caller-field check, `execute`.

`identity(request)` is the identity the edge middleware established from the credential; a
route cannot get one any other way. `check_caller` enforces the narrowing rule for fields that
name the caller. `execute` runs one operation under the per-request timeout and feeds metrics.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel

from bridge.operations import admin as admin_ops
from bridge import operations as ops
from bridge.operations import reads
from bridge.errors import Unauthenticated
from bridge.results import RecallResult
from bridge.errors import ImpersonationRefused, RequestTimeout
from bridge.doors.http.schemas import AuditOut, GrantOut, ManifestOut, RecallResponse, RefModel
from bridge.state.records import AuditEvent, Grant, InjectionManifest
from identity.model import MemoryIdentity

__all__ = ["identity", "check_caller", "execute", "grant_out", "manifest_out", "audit_out", "recall_out", "unvalidated_builder"]

M = TypeVar("M", bound=BaseModel)


def identity(request: Request) -> MemoryIdentity:
    # read from the scope's state dict, which is what `request.state.identity` reads through a
    # `State` wrapper made for this one look-up
    found = request.scope.get("state", {}).get("identity")
    if not isinstance(found, MemoryIdentity):  # a route reached without the edge: fail closed
        raise Unauthenticated("no authenticated identity")
    return found



def check_caller(who: MemoryIdentity, *, agent_id: str | None = None, user_id: str | None = None, team_id: str | None = None) -> None:
    """A body/query field naming the caller must equal the authenticated identity (it may only
    narrow, and there is nothing to narrow to): anything else is a 403 naming the field."""
    for name, given, actual in (("agent_id", agent_id, who.agent_id), ("user_id", user_id, who.user_id), ("team_id", team_id, who.workspace_id)):
        if given is not None and given != actual:
            raise ImpersonationRefused(
                f"{name} names someone other than the authenticated caller; identity comes from the credential, not the request", who=who,
            )


#: Operations that change nothing but their own audit row: a timeout may simply cancel them.
READS = (
    ops.Recall, ops.QueryAudit, reads.GetMemory, reads.FindMemory, reads.MemoryHistory, reads.FindByKey, reads.ListMemories, reads.PendingApprovals, reads.ListGrants,
    admin_ops.TenantGrants, admin_ops.TenantManifests, admin_ops.ScopeCounts, admin_ops.WhoCanRead,
)


async def execute(request: Request, who: MemoryIdentity, op: ops.Operation) -> Any:
    """Run `op` under the per-request timeout. A read is cancelled at the deadline. A write is
    never cut in half: at the deadline the client gets a 503 while the write runs to its end
    (audited, or reconciled), tracked so that shutdown waits for it; a retry with the same
    idempotency key (explicit, or the automatic one of the same session) cannot duplicate it."""
    ctx = request.app.state["ctx"]
    timeout = ctx.settings.request_timeout_seconds
    try:
        if isinstance(op, READS):  # asyncio.timeout: stays in this task (no task per request)
            async with asyncio.timeout(timeout):
                result = await ctx.bridge.execute(who, op)
        else:
            task = asyncio.ensure_future(ctx.bridge.execute(who, op))
            ctx.background.add(task)
            task.add_done_callback(ctx.background.discard)
            result = await asyncio.wait_for(asyncio.shield(task), timeout)
    except TimeoutError:
        raise RequestTimeout(f"{op.operation_name()} did not finish within {timeout:g} s (a write goes on to completion; retry with the same idempotency key)") from None
    if isinstance(result, RecallResult):
        ctx.metrics.recall(len(result.scopes_searched), result.guard_alarms)
    return result


def unvalidated_builder(model: type[M]) -> Callable[[dict[str, Any]], M]:
    """A builder of `model` from trusted values that name each of its fields exactly once, in
    the model's field order: the object `model.model_construct(**values)` builds (the same
    `__dict__`, fields set, no extra, no private state), set directly. model_construct first walks
    every field's aliases and defaults, ~4.5 us for a model of ten fields, against ~1 us here (the
    recall's request and response are built on every GET /recall). Any other call (a field missing
    or extra) and any model that model_construct treats specially (aliases, a root model, a
    post-init hook, extra fields allowed) goes to model_construct itself."""
    fields = model.__pydantic_fields__
    names = tuple(fields)
    plain = (
        not model.__pydantic_root_model__ and not model.__pydantic_post_init__ and model.model_config.get("extra") != "allow"
        and all(f.alias is None and f.validation_alias is None for f in fields.values())
    )
    set_attr = object.__setattr__

    def build(values: dict[str, Any]) -> M:
        if not plain or tuple(values) != names:
            return model.model_construct(**values)
        built = model.__new__(model)
        set_attr(built, "__dict__", values)
        set_attr(built, "__pydantic_fields_set__", set(names))
        set_attr(built, "__pydantic_extra__", None)
        set_attr(built, "__pydantic_private__", None)
        return built

    return build


_RECALL_JSON = RecallResponse.__pydantic_serializer__.to_json
_RECALL_RESPONSE = unvalidated_builder(RecallResponse)


def recall_out(r: RecallResult) -> Response:
    """The `RecallResponse` JSON, serialised straight from the (already validated) result: the
    hot path skips FastAPI's re-validation of every recalled item. test_openapi_drift and
    schemathesis check it still matches the RecallResponse schema."""
    # built unvalidated as the response model itself, then pydantic's own JSON serialiser: a
    # dict dump plus json.dumps cost about 6x as much for a recall of 20 memories. Its bytes go
    # out as they are (`model_dump_json` decodes them to a str that `Response` encodes again)
    response = _RECALL_RESPONSE({
        "identity": r.identity, "purpose": r.purpose, "memories": list(r.items), "context": r.context, "tokens_used": r.tokens_used,
        "scopes_searched": list(r.scopes_searched), "partial": r.partial, "failed_scopes": list(r.failed_scopes), "guard_alarms": r.guard_alarms,
        "expired_dropped": r.expired_dropped,
    })
    return Response(_RECALL_JSON(response), media_type="application/json")


def grant_out(g: Grant) -> GrantOut:
    return GrantOut(
        grant_id=g.grant_id, tenant_id=g.tenant_id, grantee_user_id=g.grantee_user_id, grantee_agent_id=g.grantee_agent_id, scope=str(g.scope),
        issued_by=g.issued_by, reason=g.reason, issued_at=g.issued_at, expires_at=g.expires_at, revoked_at=g.revoked_at,
    )


def manifest_out(m: InjectionManifest) -> ManifestOut:
    return ManifestOut(
        manifest_id=m.manifest_id, child_agent_id=m.child_agent_id, parent_agent_id=m.parent_agent_id, task=m.task, depth=m.depth.value,
        memories=[RefModel(scope=str(k), memory_id=i) for k, i in m.entries], expires_at=m.expires_at, may_reinject=m.may_reinject,
        parent_manifest_id=m.parent_manifest_id,
    )


def audit_out(e: AuditEvent) -> AuditOut:
    return AuditOut(
        seq=e.seq, ts=e.ts, tenant_id=e.tenant_id, actor=e.actor, session_id=e.session_id, action=e.action,
        memory_ids=list(e.memory_ids), scopes=list(e.scopes), grant_ids=list(e.grant_ids), detail=dict(e.detail),
    )
