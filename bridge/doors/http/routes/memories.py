"""Routes that write or change memories, and the read API over them (`/api/v1/...`).

A memory is addressed as `/memories/{memory_id}?scope=<scope key>` (a scope key holds slashes), or
by the caller's own idempotency key as `/memories/by-key/{key}?scope=<scope key>`. Without a scope,
`GET /memories` is "all my memories" and `GET /memories/{id}` "this id", both within the scopes the
caller reads by default (a memory elsewhere is a 404, as if it did not exist).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from bridge import operations as ops
from bridge.operations import reads
from bridge.results import MemoryHistory, MemoryPage, MemoryRecord
from bridge.results import CaptureResult, WriteResult
from bridge.doors.http.routes.common import check_caller, execute, identity
from bridge.doors.http.routes.sharing import write_team
from bridge.doors.http.schemas import (
    CaptureRequest, CountOut, Deleted, EditRequest, ForgetSubjectRequest, PromoteRequest, RememberRequest, WriteBackRequest,
)

router = APIRouter(prefix="/api/v1", tags=["memories"])
Scope = Annotated[str, Query(min_length=1, max_length=400, description="The memory's scope key, e.g. 'acme/ws/alpha'.")]
AnyScope = Annotated[str | None, Query(min_length=1, max_length=400, description="The scope key, e.g. 'acme/ws/alpha'; omitted: every scope the caller reads by default.")]


@router.post("/capture", response_model=CaptureResult, summary="Capture a conversation (seed 000)")
async def capture(body: CaptureRequest, request: Request) -> CaptureResult:
    who = identity(request)
    check_caller(who, agent_id=body.agent_id, user_id=body.user_id)
    team = write_team(who, body.team_id, body.memory_type)
    messages: list = list(body.messages or [])
    return await execute(request, who, ops.Capture(messages=messages, idempotency_key=body.idempotency_key, memory_type=body.memory_type, visible_to=body.visible_to, team_id=team, expires_at=body.expires_at, ttl_s=body.ttl_s, content=body.content))


@router.post("/memories", response_model=WriteResult, status_code=201, summary="Remember one memory")
async def remember(body: RememberRequest, request: Request) -> WriteResult:
    who = identity(request)
    team = write_team(who, body.team_id, body.memory_type)
    op = ops.Remember(content=body.content, kind=body.kind, visibility=body.visibility, department_id=body.department_id, idempotency_key=body.idempotency_key, metadata=body.metadata, confidence=body.confidence, memory_type=body.memory_type, visible_to=body.visible_to, team_id=team, expires_at=body.expires_at, ttl_s=body.ttl_s)
    return await execute(request, who, op)


@router.get("/memories", response_model=MemoryPage, summary="List a readable scope's memories, or all the caller's (cursor pages)")
async def list_memories(
    request: Request, scope: AnyScope = None, cursor: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50, status: Literal["active", "pending", "superseded"] = "active",
) -> MemoryPage:
    return await execute(request, identity(request), reads.ListMemories(scope=scope, cursor=cursor, limit=limit, status=status))


@router.get("/memories/by-key/{key}", response_model=MemoryRecord, summary="The caller's own memory stored with an idempotency key (O(1))")
async def find_by_key(key: str, scope: Scope, request: Request) -> MemoryRecord:
    return await execute(request, identity(request), reads.FindByKey(scope=scope, key=key))


@router.get("/memories/{memory_id}", response_model=MemoryRecord, summary="Get one memory by reference, or by id among the caller's")
async def get_memory(memory_id: str, request: Request, scope: AnyScope = None) -> MemoryRecord:
    if scope is None:
        return await execute(request, identity(request), reads.FindMemory(memory_id=memory_id))
    return await execute(request, identity(request), reads.GetMemory(ref=(scope, memory_id)))


@router.get("/memories/{memory_id}/history", response_model=MemoryHistory, summary="Who changed a memory, what and when (from the audit log)")
async def memory_history(memory_id: str, request: Request, scope: AnyScope = None, limit: Annotated[int, Query(ge=1, le=500)] = 100) -> MemoryHistory:
    return await execute(request, identity(request), reads.MemoryHistory(memory_id=memory_id, scope=scope, limit=limit))


@router.patch("/memories/{memory_id}", response_model=MemoryRecord, summary="Edit a memory in place (same id, re-embedded, audited)")
async def edit_memory(memory_id: str, scope: Scope, body: EditRequest, request: Request) -> MemoryRecord:
    return await execute(request, identity(request), reads.EditMemory(ref=(scope, memory_id), content=body.content, metadata=body.metadata, confidence=body.confidence))


@router.delete("/memories/{memory_id}", response_model=Deleted, summary="Forget one memory")
async def forget(memory_id: str, scope: Scope, request: Request) -> Deleted:
    return Deleted(deleted=await execute(request, identity(request), ops.Forget(ref=(scope, memory_id))))


@router.post("/memories/{memory_id}/approve", response_model=WriteResult, summary="Approve a pending memory")
async def approve(memory_id: str, scope: Scope, request: Request) -> WriteResult:
    return await execute(request, identity(request), ops.Approve(ref=(scope, memory_id)))


@router.post("/memories/{memory_id}/reject", response_model=Deleted, summary="Reject a pending memory")
async def reject(memory_id: str, scope: Scope, request: Request) -> Deleted:
    return Deleted(deleted=await execute(request, identity(request), reads.Reject(ref=(scope, memory_id))))


@router.post("/memories/{memory_id}/promote", response_model=WriteResult, summary="Widen a memory's visibility (or propose it)")
async def promote(memory_id: str, scope: Scope, body: PromoteRequest, request: Request) -> WriteResult:
    return await execute(request, identity(request), ops.Promote(ref=(scope, memory_id), to=body.to, department_id=body.department_id))


@router.get("/approvals", response_model=MemoryPage, summary="Pending memories awaiting this approver")
async def approvals(request: Request, cursor: Annotated[str | None, Query(max_length=1024)] = None, limit: Annotated[int, Query(ge=1, le=500)] = 50) -> MemoryPage:
    return await execute(request, identity(request), reads.PendingApprovals(cursor=cursor, limit=limit))


@router.post("/write-back", response_model=WriteResult, status_code=201, summary="A child agent's result, with derived_from lineage")
async def write_back(body: WriteBackRequest, request: Request) -> WriteResult:
    return await execute(request, identity(request), ops.WriteBack(manifest_id=body.manifest_id, content=body.content, kind=body.kind, visibility=body.visibility, idempotency_key=body.idempotency_key, metadata=body.metadata))


@router.post("/forget-subject", response_model=CountOut, summary="Erase every memory by or about one user")
async def forget_subject(body: ForgetSubjectRequest, request: Request) -> CountOut:
    return CountOut(count=await execute(request, identity(request), ops.ForgetSubject(subject_user_id=body.subject_user_id)))
