"""`create_app()`: the FastAPI application of the memory service.

Why FastAPI on uvicorn: the ecosystem's convention for async Python services; request and
response models are pydantic (as the bridge's results already are), and the OpenAPI 3.1 spec
comes from those models, so the spec cannot drift from the code.

The edge (`EdgeMiddleware`, plain ASGI, outermost) does, for every request, in this order:
request id -> query/body size limits -> its turn (turns.py: requests start in the order they were
read, one per loop turn) -> read the body (bounded) -> authenticate (JWT, API key or
signed gateway headers over this exact body) -> per-identity rate limit -> the route, which
maps one request model to one operation (a query-only route, GET /api/v1/recall, is called by
the edge itself, past FastAPI's routing: direct.py) -> access log and metrics. Every error on the way is
the same problem+json (`problems.py`); an unexpected exception is a 500 with the request id and
nothing else. Operational routes (/health, /ready, /metrics, the spec) skip authentication.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from adapters.errors import BackendError
from bridge.errors import VikingBridgeError
from bridge.facade import MemoryBridge
from bridge.doors.http import admin as console
from bridge.doors.edge import build_edge_providers, default_session_key
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.direct import DirectRoutes
from identity.providers.api_keys import ApiKeyProvider
from bridge.doors.connection import read_deadline
from bridge.doors.http.limits import json_body, BodyLimit, TokenBuckets
from bridge.doors.http.maintenance import purge_loop
from bridge.doors.http.observability import Metrics, access_log
from bridge.doors.http.problems import MEDIA_TYPE, problem_body, problem_for
from bridge.doors.http.routes import admin, memories, ops, recall, roles, sharing
from bridge.errors import ImpersonationRefused
from bridge.doors.http.settings import ServiceSettings, load_service_settings
from bridge.doors.http.spec import DESCRIPTION, PROBLEM_RESPONSES, SUMMARY, openapi as _openapi
from bridge.doors.http.turns import Turns
from bridge.doors.http.telemetry import fastapi_telemetry, redact_query_strings

__all__ = ["create_app", "ServiceContext", "API_VERSION"]

log = logging.getLogger("viking_bridge.service")
API_VERSION = "1.0.0"
ROUTERS = (recall, memories, admin, ops, roles, sharing, console)
PUBLIC_PATHS = ops.PUBLIC_PATHS | console.PUBLIC_PATHS  # the console's page holds no data, so it needs no credential
#: A random tag of this worker process, sent as `X-Served-By` (tests prove cross-worker
#: guarantees with it; it reveals nothing, not even the pid).
WORKER_TAG = uuid.uuid4().hex[:12]
_SERVED_BY = (b"x-served-by", WORKER_TAG.encode())
_REQUEST_ID = re.compile(r"[A-Za-z0-9._\-]{8,64}")


def new_request_id() -> str:
    """The id of a request that brought none of its own (a random uuid4, as hex)."""
    return uuid.uuid4().hex


@dataclass
class ServiceContext:
    bridge: MemoryBridge
    auth: EdgeAuthenticator
    settings: ServiceSettings
    buckets: TokenBuckets
    metrics: Metrics
    owns_bridge: bool = True
    #: writes that outlived their request's timeout: shutdown waits for them before closing
    background: set[asyncio.Future[Any]] = field(default_factory=set)
    #: API requests start in the order they were read, one per loop turn (turns.py)
    turns: Turns = field(default_factory=Turns)


def _problem_response(exc: BaseException, request_id: str, challenge: str | None = None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    status, body, headers = problem_for(exc, request_id)
    if status == 401 and challenge:
        headers["WWW-Authenticate"] = challenge
    raw = json.dumps(body, ensure_ascii=False).encode()
    out = [(b"content-type", MEDIA_TYPE.encode()), (b"content-length", str(len(raw)).encode()), (b"x-request-id", request_id.encode()), _SERVED_BY]
    out += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return status, out, raw


class EdgeMiddleware:
    def __init__(self, app: Any, fastapi_app: FastAPI) -> None:
        self.app = app
        self.fastapi_app = fastapi_app
        self.routes = [r for module in ROUTERS for r in module.router.routes]
        self.direct = DirectRoutes(self.routes, fastapi_app)

    def _route(self, scope: dict[str, Any]) -> str:
        """The route template (`/api/v1/memories/{memory_id}`): metrics and logs never carry
        the raw path, whose segments are ids, nor the query string."""
        partial = None
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return getattr(route, "path", "?")
            if match is Match.PARTIAL and partial is None:
                partial = getattr(route, "path", "?")
        return partial or ("/openapi.json" if scope["path"] == "/openapi.json" else "unmatched")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ctx: ServiceContext = self.fastapi_app.state["ctx"]  # item access: no attribute miss first, as `.ctx` has
        started = time.perf_counter()
        given = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _REQUEST_ID.fullmatch(given) else new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        direct = self.direct.find(scope)
        route = direct[0].path if direct is not None else self._route(scope)
        status_seen = {"status": 500, "started": False}
        principal: str | None = None
        error: str | None = None

        async def send_wrapped(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status_seen["status"], status_seen["started"] = message["status"], True
                headers = [*message.get("headers", ()), _SERVED_BY]
                if not any(k == b"x-request-id" for k, _ in headers):
                    headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        async def reply(exc: BaseException) -> None:
            nonlocal error
            error = type(exc).__name__
            status, headers, raw = _problem_response(exc, request_id, ctx.auth.challenge)
            status_seen["status"] = status
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": raw})

        limit = BodyLimit(ctx.settings.max_body_bytes, ctx.settings.max_query_bytes)
        try:
            declares_body = limit.check_head(scope)
            if scope["path"] in PUBLIC_PATHS:
                await self.app(scope, receive, send_wrapped)
                return
            await ctx.turns.enter()
            # a head without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3): the
            # server has the whole request already, so there is nothing to put a deadline on
            receive_limited = limit.wrap(read_deadline(receive, ctx.settings.body_timeout_seconds) if declares_body else receive)
            chunks: list[bytes] = []
            while True:
                message = await receive_limited()
                if message["type"] == "http.disconnect":
                    return
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body = b"".join(chunks)
            target = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
            if scope.get("query_string"):
                target += "?" + scope["query_string"].decode("latin-1")
            headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
            who = await ctx.auth.authenticate(scope["method"], target, headers, body)
            json_body(scope, body)  # after authentication: a gateway's signature covers the headers as sent
            principal = who.principal
            ctx.buckets.take(who.fingerprint)
            scope["state"]["identity"] = who
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            if direct is not None:  # a query-only route: its handler, past FastAPI's routing (direct.py)
                await self.direct.serve(direct, scope, replay, send_wrapped)
            else:
                await self.app(scope, replay, send_wrapped)
        except Exception as exc:  # noqa: BLE001 - the edge answers every failure as problem+json
            if status_seen["started"]:
                raise  # the response is on its way: nothing sane can be sent any more
            if isinstance(exc, BackendError):
                ctx.metrics.backend_errors.labels(type(exc).__name__).inc()
            if not _is_known(exc):
                log.error("unhandled %s at the edge (request %s)", type(exc).__name__, request_id)
            await reply(exc)
        finally:
            ctx.metrics.observe(scope["method"], route, status_seen["status"], time.perf_counter() - started)
            access_log(request_id, scope["method"], route, status_seen["status"], started, principal, error)


def _is_known(exc: BaseException) -> bool:
    return isinstance(exc, VikingBridgeError)


def _request_id(request: Request) -> str:
    return getattr(request.state, "request_id", None) or new_request_id()


def _install_handlers(app: FastAPI) -> None:
    def respond(request: Request, exc: BaseException) -> JSONResponse:
        ctx: ServiceContext = request.app.state.ctx
        if isinstance(exc, BackendError):
            ctx.metrics.backend_errors.labels(type(exc).__name__).inc()
        status, body, headers = problem_for(exc, _request_id(request))
        if status == 401:
            headers["WWW-Authenticate"] = ctx.auth.challenge
        if status == 500:
            log.error("unhandled %s in %s %s (request %s)", type(exc).__name__, request.method, request.scope.get("route", ""), _request_id(request))
        return JSONResponse(body, status_code=status, headers=headers, media_type=MEDIA_TYPE)

    @app.exception_handler(RequestValidationError)
    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        malformed = any(e.get("type") == "json_invalid" for e in errors)
        status = 400 if malformed else 422
        detail = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors[:10])
        body = problem_body(status, "malformed-request" if malformed else "unprocessable", "Malformed request" if malformed else "Request does not fit its schema", detail[:2000], _request_id(request))
        return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        body = problem_body(exc.status_code, "http-" + str(exc.status_code), str(exc.detail), str(exc.detail), _request_id(request))
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None), media_type=MEDIA_TYPE)

    @app.exception_handler(VikingBridgeError)
    async def bridge_error(request: Request, exc: VikingBridgeError) -> JSONResponse:
        if isinstance(exc, ImpersonationRefused):  # refused before any operation: audit it here
            await request.app.state.ctx.bridge.audit_refusal(exc.who, f"{request.method} {request.url.path}", exc)
        return respond(request, exc)


def application(lifespan: Any = None, *, docs: bool = False) -> FastAPI:
    """The routes, the error handlers and the spec, without any state: what `create_app`
    serves and what `bridge.doors.http.openapi` writes to docs/openapi.json. `docs`: the
    interactive page at /docs (`VIKING_BRIDGE_SERVICE_DOCS`; off by default)."""
    telemetry = fastapi_telemetry()  # the provider configured now redacted, and FastAPI's spans only into it (telemetry.py)
    app = FastAPI(
        title="viking-bridge memory service", version=API_VERSION, lifespan=lifespan, summary=SUMMARY, description=DESCRIPTION,
        docs_url="/docs" if docs else None, redoc_url=None, generate_unique_id_function=lambda route: route.name,  # operationId = the function's name
        **({} if telemetry is None else {"telemetry": telemetry}),
    )
    for module in ROUTERS:
        app.include_router(module.router, responses=None if module is ops else PROBLEM_RESPONSES)
    _install_handlers(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


async def warm_store(backend: Any, megabytes: int, stop: threading.Event | None = None) -> int:
    """The store's partitions loaded within `megabytes`, in a thread (the loop keeps serving):
    what `VIKING_BRIDGE_SERVICE_WARM_MB` asks of a store that can (the local one); logged, never
    raised (a warm-up that fails leaves searches to load what they need, as without it). Setting
    `stop` ends it after the partition being loaded (the service's shutdown does)."""
    warm = getattr(backend, "warm", None)
    if not callable(warm):
        log.warning("VIKING_BRIDGE_SERVICE_WARM_MB is set, but the %s backend has nothing to warm", getattr(backend, "name", "?"))
        return 0
    started = time.perf_counter()
    try:
        loaded = await asyncio.to_thread(warm, max_bytes=megabytes * 1_048_576, stop=stop)
    except Exception:
        log.exception("warm-up of the store failed; searches load what they need")
        return 0
    log.info("warm-up: %d partition(s) loaded in %.1f s, %.1f MiB of vectors resident", loaded, time.perf_counter() - started,
             getattr(backend, "resident_vector_bytes", 0) / 1_048_576)
    return loaded


def create_app(bridge: MemoryBridge | None = None, auth: EdgeAuthenticator | None = None, settings: ServiceSettings | None = None) -> FastAPI:
    """The service. Without arguments (what `viking-bridge serve` and every worker run): the
    bridge `open_bridge()` opens from the same settings as the library, the providers from the
    identity settings. Tests and the contract suite's HTTP mode may pass their own."""
    service_settings = settings or load_service_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ctx: ServiceContext = app.state.ctx
        redact_query_strings()  # a tracer provider FastAPI configured at start (FASTAPI_OTEL_AUTO_CONFIGURE; telemetry.py)
        await ctx.bridge.aopen()  # open checks before the first request, not during it
        purger = None
        if service_settings.purge_interval_seconds and service_settings.purge_api_keys:  # expired memories and keys are purged: bridge/doors/http/maintenance.py
            keys = [k.get_secret_value() for k in service_settings.purge_api_keys]
            purger = asyncio.ensure_future(purge_loop(ctx.bridge, ctx.auth, keys, service_settings.purge_interval_seconds))
        warming, stop_warming = None, threading.Event()
        if service_settings.warm_mb:
            warming = asyncio.ensure_future(warm_store(ctx.bridge.backend, service_settings.warm_mb, stop_warming))
        try:
            yield
        finally:
            if purger is not None:
                purger.cancel()
            if warming is not None:  # stopped after the partition it is loading, not run to its end
                stop_warming.set()
                await asyncio.wait([warming], timeout=service_settings.shutdown_grace_seconds or None)
            if ctx.background:
                await asyncio.wait(list(ctx.background), timeout=service_settings.shutdown_grace_seconds or None)
            if ctx.owns_bridge:
                await ctx.bridge.aclose()

    app = application(lifespan, docs=service_settings.docs)
    owns = bridge is None
    if bridge is None or auth is None:
        from bridge.facade import open_bridge
        from bridge.assembly.settings import load_bridge_settings
        from identity.settings import load_settings

        bridge_settings = load_bridge_settings()
        if bridge is None:
            bridge = open_bridge(bridge_settings)
        if auth is None:
            identity_settings = load_settings()
            sessionless = ["api_key"] + (["jwt"] if identity_settings.jwt is None or not identity_settings.jwt.claims.session_id else [])
            providers = build_edge_providers(
                identity_settings, service_settings.providers, bridge_settings.home, service_settings.nonce_db_path,
                shared_state=bridge.state if bridge_settings.state_url is not None else None,
            )
            auth = EdgeAuthenticator(providers, sessionless=sessionless, session_key=default_session_key(bridge_settings.home))
    key_provider = getattr(auth, "providers", {}).get("api_key")
    if bridge.runtime.api_keys is None and isinstance(key_provider, ApiKeyProvider):  # key management manages the keys this door accepts
        bridge.runtime.api_keys = key_provider.store
    app.state.ctx = ServiceContext(bridge, auth, service_settings, TokenBuckets(service_settings.rate_per_second, service_settings.rate_burst), Metrics(), owns)
    app.add_middleware(EdgeMiddleware, fastapi_app=app)
    return app
