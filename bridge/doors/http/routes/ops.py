"""Operational routes, without authentication: /health (process up), /ready (backend and state
reachable), /metrics (Prometheus). They reveal no memory, identity or configuration."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from bridge.doors.http.observability import CONTENT_TYPE_LATEST
from bridge.doors.http.schemas import Health

router = APIRouter(tags=["operations"])
PUBLIC_PATHS = frozenset({"/health", "/ready", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
READY_TIMEOUT_SECONDS = 5.0


@router.get("/health", response_model=Health, summary="The process is up")
async def health() -> Health:
    return Health(status="ok")


@router.get("/ready", response_model=Health, summary="Backend and bridge state are reachable", responses={503: {"model": Health}})
async def ready(request: Request) -> Response:
    bridge = request.app.state.ctx.bridge
    checks: dict[str, str] = {}
    # a backend of several (a routed service) probes each of them; a lone one lists a tenant holding nothing
    backend_probe = getattr(bridge.backend, "readiness", None) or (lambda: bridge.backend.list_scopes("readiness-probe"))
    for name, probe in (("state", bridge.state.audit.has_rows), ("backend", backend_probe)):
        try:
            await asyncio.wait_for(probe(), READY_TIMEOUT_SECONDS)
            checks[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure means not ready; the class name only
            checks[name] = f"failed: {type(exc).__name__}"
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse(Health(status="ready" if ok else "not ready", checks=checks).model_dump(), status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    return Response(request.app.state.ctx.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
