"""`DirectRoutes`: the edge calls a query-only route's handler itself, past FastAPI's routing.

Why: once the edge has authenticated a request, FastAPI still walks five more layers for it
(exception middleware, the exit-stack middleware, the router matching every route, the included
router, the route's request/response wrapper with two exit stacks) before the handler runs, and
back out after it: about a fifth of the door's own CPU on a served recall, measured with cProfile,
for a handler that needs none of it. A `QueryModelRoute` handler (query_route.py) takes only the
`Request`, has no dependencies, path parameters or body, and returns its `Response` itself, so the
edge can call it directly for an exact (method, path) match.

What stays exactly as it was: which handler answers (a direct route is looked up by its exact
method and path, so anything else — another method, a trailing slash, HEAD — goes through FastAPI
as before, with its 404/405), the scope the handler sees (`route`, `endpoint`, `path_params` set as
the router sets them), and the errors: an exception the handler raises goes to the app's own
exception handler for its class (the same lookup along the class's MRO that Starlette's exception
middleware does), so a 422, a problem+json or the audit of an impersonation attempt are produced by
the very same code; an exception no handler takes propagates to the edge, as before.
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, Iterable

from fastapi import FastAPI, Request, Response
from starlette.routing import BaseRoute

__all__ = ["DirectRoutes"]

Handler = Callable[[Request], Awaitable[Response]]


class DirectRoutes:
    """The query-model routes by (method, path), and how to answer one of them."""

    def __init__(self, routes: Iterable[BaseRoute], app: FastAPI) -> None:
        self.app = app
        self.by_target: dict[tuple[str, str], tuple[Any, Handler]] = {}
        for route in routes:
            handler = getattr(route, "query_model_handler", None)
            path = getattr(route, "path", "")
            if handler is None or "{" in path:  # path parameters are the router's to parse
                continue
            for method in getattr(route, "methods", None) or ():
                self.by_target[(method, path)] = (route, handler)

    def find(self, scope: dict[str, Any]) -> tuple[Any, Handler] | None:
        return self.by_target.get((scope["method"], scope["path"]))

    async def serve(self, found: tuple[Any, Handler], scope: dict[str, Any], receive: Any, send: Any) -> None:
        route, handler = found
        scope["route"], scope["endpoint"], scope["path_params"] = route, route.endpoint, {}
        request = Request(scope, receive, send)
        try:
            response = await handler(request)
        except Exception as exc:
            answer = self._exception_handler(exc)
            if answer is None:
                raise
            response = answer(request, exc)
            if inspect.isawaitable(response):
                response = await response
        await response(scope, receive, send)

    def _exception_handler(self, exc: Exception) -> Callable[[Request, Exception], Awaitable[Response]] | None:
        handlers = self.app.exception_handlers
        for cls in type(exc).__mro__:
            if cls in handlers:
                return handlers[cls]  # type: ignore[no-any-return]
        return None
