"""The edge's direct dispatch of query-only routes (bridge/doors/http/direct.py) answers exactly as
FastAPI's routing does: the same bodies, the same 422 and 403 problems, the same refusal audit,
and everything that is not an exact (method, path) match still goes through FastAPI.

In-process (the service's ASGI app over httpx's ASGI transport): each request is sent once with
the direct routes on and once with them switched off, to the same app and store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest

from bridge.doors.http.app import EdgeMiddleware, create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.direct import DirectRoutes
from bridge.doors.http.settings import ServiceSettings
from bridge.facade import MemoryBridge
from tests.service.asgikit import in_process_service


def _edge(app: Any) -> EdgeMiddleware:
    layer = app.middleware_stack
    while not isinstance(layer, EdgeMiddleware):
        layer = layer.app
    return layer


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, EdgeMiddleware, MemoryBridge]]:
    async with in_process_service(tmp_path) as (client, app, bridge):
        yield client, _edge(app), bridge


async def _both(client: httpx.AsyncClient, edge: EdgeMiddleware, send: Any) -> tuple[httpx.Response, httpx.Response]:
    direct = await send(client)
    kept, edge.direct.by_target = edge.direct.by_target, {}
    try:
        routed = await send(client)
    finally:
        edge.direct.by_target = kept
    return direct, routed


def _same(direct: httpx.Response, routed: httpx.Response) -> None:
    assert direct.status_code == routed.status_code
    assert direct.headers["content-type"] == routed.headers["content-type"]
    strip = lambda body: {k: v for k, v in body.items() if k not in ("request_id", "instance")}  # noqa: E731 - per request
    assert strip(direct.json()) == strip(routed.json())


async def test_get_recall_is_served_directly(served, monkeypatch) -> None:
    client, edge, _ = served
    calls: list[str] = []
    serve = DirectRoutes.serve

    async def spy(self, found, scope, receive, send):  # noqa: ANN001, ANN202
        calls.append(scope["path"])
        await serve(self, found, scope, receive, send)

    monkeypatch.setattr(DirectRoutes, "serve", spy)
    assert (await client.get("/api/v1/recall", params={"query": "deployment"})).status_code == 200
    assert calls == ["/api/v1/recall"]
    assert (await client.post("/api/v1/recall", json={"query": "deployment"})).status_code == 200  # a body: FastAPI's route
    assert calls == ["/api/v1/recall"]


async def test_direct_recall_answers_as_the_router_does(served) -> None:
    client, edge, _ = served
    direct, routed = await _both(client, edge, lambda c: c.get("/api/v1/recall", params={"query": "deployment runbook", "budget_tokens": 300}))
    assert direct.status_code == 200 and direct.json()["memories"], direct.text
    _same(direct, routed)


@pytest.mark.parametrize("params", [
    {"query": "x", "budget_tokens": "0"}, {"query": ""}, {}, {"query": "x", "purpose": "gossip"}, {"query": "x", "kinds": "nope"},
    {"query": "x", "min_score": "2"}, {"query": "x", "allow_partial": "maybe"},
])
async def test_direct_recall_validation_errors_are_the_same_problems(served, params) -> None:
    client, edge, _ = served
    direct, routed = await _both(client, edge, lambda c: c.get("/api/v1/recall", params=params))
    assert direct.status_code == 422 and direct.headers["content-type"].startswith("application/problem+json"), direct.text
    _same(direct, routed)


async def test_direct_recall_impersonation_is_refused_and_audited_as_before(served) -> None:
    client, edge, bridge = served
    direct, routed = await _both(client, edge, lambda c: c.get("/api/v1/recall", params={"query": "x", "user_id": "someone-else"}))
    assert direct.status_code == 403
    _same(direct, routed)
    denied = (await client.get("/api/v1/audit", params={"action": "denied"})).json()
    assert len(denied) == 2, denied  # one refusal row per attempt, on either path


@pytest.mark.parametrize("method, path", [("HEAD", "/api/v1/recall"), ("PUT", "/api/v1/recall"), ("GET", "/api/v1/recall/"), ("GET", "/api/v1/recall/x")])
async def test_anything_but_an_exact_match_goes_through_fastapi(served, method, path) -> None:
    client, edge, _ = served
    assert edge.direct.find({"method": method, "path": path}) is None
    direct, routed = await _both(client, edge, lambda c: c.request(method, path, params={"query": "x"}))
    assert direct.status_code == routed.status_code and direct.status_code != 200


def test_only_query_model_routes_without_path_parameters_are_direct(tmp_path: Path) -> None:
    app = create_app(MemoryBridge.open_local(tmp_path / "data"), EdgeAuthenticator({}), ServiceSettings())
    edge = EdgeMiddleware(app.router, app)
    assert set(edge.direct.by_target) == {("GET", "/api/v1/recall")}
