"""Seed 000's read routes: recall (GET with query parameters, POST with a body) and inject-context."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response

from bridge import operations as ops
from bridge.operations import reads
from bridge.results import InjectedContext
from bridge.doors.http.routes.common import check_caller, execute, identity, recall_out, unvalidated_builder
from bridge.doors.http.query_route import QueryModelRoute
from bridge.doors.http.schemas import CALLER_AGENT, CALLER_USER, InjectRequest, RecallRequest, RecallResponse

#: GET /recall's eleven query parameters are validated by one model built once (query_route.py)
router = APIRouter(prefix="/api/v1", tags=["recall"], route_class=QueryModelRoute)
_RECALL_REQUEST = unvalidated_builder(RecallRequest)


async def _recall(request: Request, body: RecallRequest) -> Response:
    who = identity(request)
    check_caller(who, agent_id=body.agent_id, user_id=body.user_id)
    op = ops.Recall(query=body.query, purpose=body.purpose, budget_tokens=body.budget_tokens, kinds=body.kinds, include_scopes=body.include_scopes, manifest_id=body.manifest_id, allow_partial=body.allow_partial, min_score=body.min_score,
                    only_scopes=None if body.only_scopes is None else tuple(body.only_scopes))
    return recall_out(await execute(request, who, op))


@router.get("/recall", response_model=RecallResponse, summary="Recall (seed 000: GET /api/v1/recall?query=...&agent_id=...)")
async def recall_get(
    request: Request,
    query: Annotated[str, Query(min_length=1, description="What to recall. Never logged.")],
    purpose: Literal["chat", "coding"] = "chat",
    budget_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    kinds: Annotated[list[Literal["profile", "preference", "event", "fact", "decision", "procedure", "experience", "standard", "note"]] | None, Query(max_length=16)] = None,
    include_scopes: Annotated[list[str], Query(max_length=64)] = [],  # noqa: B006 - FastAPI copies defaults
    manifest_id: str | None = None,
    allow_partial: bool = False,
    min_score: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
    agent_id: Annotated[str | None, Query(description=CALLER_AGENT)] = None,
    user_id: Annotated[str | None, Query(description=CALLER_USER)] = None,
    only_scopes: Annotated[list[str] | None, Query(max_length=64, description="Narrow the recall to exactly these readable scopes; never widens.")] = None,
) -> Response:
    # validated already, against the very constraints RecallRequest has (a list given in the query
    # string is never empty; tests/service/test_query_route.py keeps the two equal): built, not
    # validated a second time
    body = _RECALL_REQUEST({
        "query": query, "purpose": purpose, "budget_tokens": budget_tokens, "kinds": kinds, "include_scopes": include_scopes, "manifest_id": manifest_id,
        "allow_partial": allow_partial, "min_score": min_score, "agent_id": agent_id, "user_id": user_id, "only_scopes": only_scopes,
    })
    return await _recall(request, body)


@router.post("/recall", response_model=RecallResponse, summary="Recall with a JSON body")
async def recall_post(body: RecallRequest, request: Request) -> Response:
    return await _recall(request, body)


async def _inject(request: Request, body: InjectRequest) -> InjectedContext:
    who = identity(request)
    check_caller(who, user_id=body.user_id)
    refs = None if body.memory_refs is None else [(r.scope, r.memory_id) for r in body.memory_refs]
    inner = ops.Inject(child_agent_id=body.agent_id, task=body.task, depth=body.depth, memory_refs=refs, from_manifest_id=body.from_manifest_id, ttl_seconds=body.ttl_seconds, may_reinject=body.may_reinject)
    return await execute(request, who, reads.InjectContext(inject=inner))


@router.get("/inject-context", response_model=InjectedContext, summary="Inject context into a child agent (seed 000)")
async def inject_get(
    request: Request,
    agent_id: Annotated[str, Query(description="TARGET: the child agent (same tenant and user). Never the caller itself.")],
    task: Annotated[str, Query(min_length=1)],
    depth: Literal["minimal", "standard", "full"] = "standard",
    ttl_seconds: Annotated[float, Query(gt=0, le=7 * 86400)] = 3600,
    may_reinject: bool = False,
    user_id: Annotated[str | None, Query(description=CALLER_USER)] = None,
) -> InjectedContext:
    return await _inject(request, InjectRequest(agent_id=agent_id, task=task, depth=depth, ttl_seconds=ttl_seconds, may_reinject=may_reinject, user_id=user_id))


@router.post("/inject-context", response_model=InjectedContext, summary="Inject context with explicit memory references or from a manifest")
async def inject_post(body: InjectRequest, request: Request) -> InjectedContext:
    return await _inject(request, body)
