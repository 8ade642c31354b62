"""Operational routes, without authentication: / (the home: where the console and the API docs
are), /health (process up), /ready (backend and state reachable, and the disk they write to not
full), /metrics (Prometheus). They reveal no memory, identity or configuration."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from bridge.doors.http.observability import CONTENT_TYPE_LATEST
from bridge.doors.http.schemas import Health

router = APIRouter(tags=["operations"])
PUBLIC_PATHS = frozenset({"/", "/health", "/ready", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
READY_TIMEOUT_SECONDS = 5.0
#: Below this much free space where the store or the state writes, the service is not ready: every
#: request writes (a recall is audited), so a full disk fails them all while the probes still read.
MIN_FREE_BYTES = 16 * 1024 * 1024


def _local_dirs(bridge: Any) -> list[Path]:
    """The directories the local store and the SQLite state write to (none for remote ones)."""
    found = [getattr(bridge.backend, "path", None), getattr(getattr(bridge.state, "db", None), "path", None)]
    return [Path(p) if Path(p).is_dir() else Path(p).parent for p in found if isinstance(p, (str, Path))]


async def _disk(bridge: Any) -> None:
    for directory in _local_dirs(bridge):
        if shutil.disk_usage(directory).free < MIN_FREE_BYTES:
            raise OSError(f"under {MIN_FREE_BYTES} bytes free")


#: Where a person (or a script) who opens the service's address goes next.
HOME_LINKS = {"console": "/admin/", "api_docs": "/docs", "openapi": "/openapi.json", "health": "/health", "ready": "/ready"}
_HOME_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>viking-bridge</title></head>
<body><h1>viking-bridge memory service</h1>
<p>Every call under <code>/api/v1</code> needs a credential: an API key (<code>X-API-Key</code>, or
<code>Authorization: Bearer vbk_...</code>) or a JWT (<code>Authorization: Bearer ...</code>).</p>
<ul>{links}</ul></body></html>
"""
_HOME_HEADERS = {"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


@router.get("/", include_in_schema=False)
async def home(request: Request) -> Response:
    """The first thing someone opening the address sees: HTML for a browser, JSON otherwise."""
    if "text/html" in request.headers.get("accept", ""):
        links = "".join(f'<li><a href="{path}">{name.replace("_", " ")}</a> <code>{path}</code></li>' for name, path in HOME_LINKS.items())
        return Response(_HOME_HTML.format(links=links), media_type="text/html; charset=utf-8", headers=_HOME_HEADERS)
    return JSONResponse({"service": "viking-bridge", "api": "/api/v1", "links": HOME_LINKS,
                         "credentials": "X-API-Key: vbk_..., Authorization: Bearer vbk_... (API key) or Authorization: Bearer <JWT>"}, headers=_HOME_HEADERS)


@router.get("/health", response_model=Health, summary="The process is up")
async def health() -> Health:
    return Health(status="ok")


@router.get("/ready", response_model=Health, summary="Backend and bridge state are reachable", responses={503: {"model": Health}})
async def ready(request: Request) -> Response:
    bridge = request.app.state.ctx.bridge
    checks: dict[str, str] = {}
    # a backend of several (a routed service) probes each of them; a lone one lists a tenant holding nothing
    backend_probe = getattr(bridge.backend, "readiness", None) or (lambda: bridge.backend.list_scopes("readiness-probe"))
    for name, probe in (("state", bridge.state.audit.has_rows), ("backend", backend_probe), ("disk", lambda: _disk(bridge))):
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
