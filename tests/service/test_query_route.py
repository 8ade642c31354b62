"""`QueryModelRoute` answers exactly as FastAPI's own parameter handling does.

The same endpoint (the recall route's parameter list) is mounted twice, once on a plain router
and once on a router with `route_class=QueryModelRoute`; every query string below must give the
same status and the same body (the values the endpoint received, or the validation errors), and
the OpenAPI parameters must be identical. The service's own GET /recall is checked through the
app: it is built by the fast route class, and a bad value is still the 422 problem it was.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from bridge.doors.http.query_route import QueryModelRoute, _query_model_handler


async def endpoint(
    request: Request,
    query: Annotated[str, Query(min_length=1, description="What to recall.")],
    purpose: Literal["chat", "coding"] = "chat",
    budget_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
    kinds: Annotated[list[Literal["fact", "note"]] | None, Query(max_length=3)] = None,
    include_scopes: Annotated[list[str], Query(max_length=4)] = [],  # noqa: B006 - FastAPI copies defaults
    manifest_id: str | None = None,
    allow_partial: bool = False,
    min_score: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
    renamed: Annotated[str | None, Query(alias="other-name")] = None,
) -> Response:
    got = dict(query=query, purpose=purpose, budget_tokens=budget_tokens, kinds=kinds, include_scopes=include_scopes, manifest_id=manifest_id,
               allow_partial=allow_partial, min_score=min_score, renamed=renamed)
    return Response(json.dumps(got, sort_keys=True), media_type="application/json")


ROUTERS: dict[str, APIRouter] = {}


def _app(route_class: type | None) -> FastAPI:
    app = FastAPI()
    router = APIRouter(route_class=route_class) if route_class else APIRouter()
    router.add_api_route("/r", endpoint, methods=["GET"])
    app.include_router(router)
    ROUTERS[app.title + str(id(app))] = router

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"errors": [{k: e.get(k) for k in ("type", "loc", "msg")} for e in exc.errors()]}, status_code=422)

    return app


QUERIES = [
    "", "query=", "query=a", "query=hello&purpose=coding", "query=a&purpose=other", "query=a&budget_tokens=0", "query=a&budget_tokens=12",
    "query=a&budget_tokens=x", "query=a&budget_tokens=1000001", "query=a&kinds=fact&kinds=note", "query=a&kinds=bogus", "query=a&kinds=fact&kinds=fact&kinds=fact&kinds=fact",
    "query=a&include_scopes=acme%2Fws%2Falpha&include_scopes=global", "query=a&include_scopes=1&include_scopes=2&include_scopes=3&include_scopes=4&include_scopes=5",
    "query=a&allow_partial=true", "query=a&allow_partial=yes", "query=a&allow_partial=maybe", "query=a&min_score=0.5", "query=a&min_score=2",
    "query=a&min_score=nan", "query=first&query=second", "query=a&unknown=1", "query=a&manifest_id=m1", "query=a&other-name=x", "query=a&renamed=x",
    "purpose=chat", "query=%E4%BD%A0%E5%A5%BD", "query=a&budget_tokens=", "query=a&kinds=",
]


@pytest.mark.parametrize("qs", QUERIES)
def test_same_answer_as_fastapi(qs: str) -> None:
    plain, fast = TestClient(_app(None)), TestClient(_app(QueryModelRoute))
    a, b = plain.get("/r?" + qs), fast.get("/r?" + qs)
    assert (b.status_code, b.json()) == (a.status_code, a.json()), qs


def test_fast_route_is_used_and_spec_is_unchanged() -> None:
    fast_app = _app(QueryModelRoute)
    route = ROUTERS[fast_app.title + str(id(fast_app))].routes[0]
    assert _query_model_handler(route) is not None  # the fast path is taken, not FastAPI's fallback
    import fastapi.routing

    def refuse(*args: object, **kwargs: object) -> object:
        raise AssertionError("FastAPI's per-parameter resolution ran")

    original, fastapi.routing.solve_dependencies = fastapi.routing.solve_dependencies, refuse  # type: ignore[assignment]
    try:  # the fast app answers without FastAPI's dependency solving; the plain one needs it
        assert TestClient(fast_app).get("/r?query=a&budget_tokens=3").json()["budget_tokens"] == 3
        with pytest.raises(AssertionError, match="per-parameter"):
            TestClient(_app(None)).get("/r?query=a")
    finally:
        fastapi.routing.solve_dependencies = original  # type: ignore[assignment]
    assert fast_app.openapi()["paths"] == _app(None).openapi()["paths"]


def test_route_with_a_response_model_falls_back() -> None:
    async def returns_data(query: str) -> dict[str, str]:
        return {"query": query}

    router = APIRouter(route_class=QueryModelRoute)
    router.add_api_route("/d", returns_data, methods=["GET"])
    assert _query_model_handler(router.routes[0]) is None  # no Request, no Response: FastAPI handles it


def test_service_recall_get_uses_it() -> None:
    from bridge.doors.http.routes import recall

    route = next(r for r in recall.router.routes if r.name == "recall_get")
    assert isinstance(route, QueryModelRoute) and _query_model_handler(route) is not None


def _constraints(schema: object) -> object:
    """A JSON schema's constraints alone: no titles, descriptions or defaults, and no `minItems: 1`
    (a list given in a query string always has an item, so GET cannot state it and need not)."""
    if isinstance(schema, dict):
        return {k: _constraints(v) for k, v in schema.items()
                if k not in ("title", "description", "default") and not (k == "minItems" and v == 1)}
    if isinstance(schema, list):
        return [_constraints(v) for v in schema]
    return schema


def test_service_recall_get_states_every_constraint_of_the_post_body() -> None:
    """GET /recall's parameters are not validated a second time as a `RecallRequest`: so each
    parameter must carry exactly the constraints of the body field of its name (the same names,
    the same required ones), or a value POST refuses would pass through GET."""
    from bridge.doors.http.openapi import spec

    document = spec()
    params = {p["name"]: p for p in document["paths"]["/api/v1/recall"]["get"]["parameters"]}
    body = document["components"]["schemas"]["RecallRequest"]
    assert set(params) == set(body["properties"])
    assert {name for name, p in params.items() if p.get("required")} == set(body.get("required", []))
    for name, field in body["properties"].items():
        assert _constraints(params[name]["schema"]) == _constraints(field), name
