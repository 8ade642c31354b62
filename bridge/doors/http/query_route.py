"""`QueryModelRoute`: a route whose query parameters are validated by one model built once.

Why: FastAPI resolves an endpoint's query parameters one by one on every request, and for each
one re-inspects its annotation (is it a sequence? a model? which alias?) before validating it on
its own. For `GET /api/v1/recall` (eleven parameters) that was the largest single cost of the HTTP
door: about a third of the CPU the service adds to a recall, measured with cProfile in the served
process. This route class reads the endpoint's declared parameters once, when the route is built,
into one pydantic model with the very same annotations and constraints, and validates the query
string against it in one call.

What stays exactly as before: the endpoint's signature (so the OpenAPI spec is generated from it
unchanged), the values the endpoint receives, and the errors: a value that does not fit is a
`RequestValidationError` whose entries carry FastAPI's `("query", name, ...)` locations, answered
by the app's handler as the same 422 problem. Unknown parameters are ignored, a repeated scalar
takes its last value and a list parameter takes every value, as FastAPI does.

It applies only to an endpoint that takes nothing but query parameters and the `Request` and that
returns a `Response` itself (so there is no response model to validate or serialise); any other
route on the router is built by FastAPI as usual.
"""

from __future__ import annotations

import inspect
import logging
import typing
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

__all__ = ["QueryModelRoute"]

log = logging.getLogger("viking_bridge.service")

Handler = Callable[[Request], Awaitable[Response]]


def _is_sequence(annotation: Any) -> bool:
    """Whether FastAPI reads this parameter with `getlist` (a list, set or tuple, optional or not)."""
    from fastapi._compat import field_annotation_is_sequence

    return bool(field_annotation_is_sequence(annotation))


def _returns_response(endpoint: Callable[..., Any]) -> bool:
    try:
        returned = typing.get_type_hints(endpoint).get("return")
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: leave the route to FastAPI
        return False
    return isinstance(returned, type) and issubclass(returned, Response)


class QueryModelRoute(APIRoute):
    """An `APIRoute` that validates a query-only endpoint's parameters with one prebuilt model."""

    def get_route_handler(self) -> Handler:
        try:
            handler = _query_model_handler(self)
        except Exception:  # noqa: BLE001 - FastAPI or pydantic internals moved: FastAPI's own (slower) handling is still correct
            log.warning("route %s: query parameters resolved by FastAPI (the one-model fast path could not be built)", self.path)
            handler = None
        #: the edge calls this handler itself for an exact (method, path) match (direct.py)
        self.query_model_handler = handler
        return handler if handler is not None else super().get_route_handler()


def _query_model_handler(route: APIRoute) -> Handler | None:
    dependant = route.dependant
    if (
        dependant.path_params or dependant.header_params or dependant.cookie_params or dependant.body_params or dependant.dependencies
        or not dependant.query_params or dependant.request_param_name is None
        or any(getattr(dependant, name, None) for name in ("websocket_param_name", "http_connection_param_name", "response_param_name",
                                                           "background_tasks_param_name", "security_scopes_param_name"))
        or not inspect.iscoroutinefunction(route.endpoint) or not _returns_response(route.endpoint)
    ):
        return None
    fields: dict[str, Any] = {}
    reads: list[tuple[str, str, bool]] = []  # (argument name, query name, read every value)
    for field in dependant.query_params:
        info = field.field_info
        fields[field.name] = (info.annotation, info)
        reads.append((field.name, field.alias, _is_sequence(info.annotation)))
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"{route.endpoint.__name__}_query", __config__=ConfigDict(extra="ignore", populate_by_name=True, arbitrary_types_allowed=True), **fields,
    )
    validate = model.__pydantic_validator__.validate_python
    endpoint = route.endpoint
    request_name = dependant.request_param_name
    names = [name for name, _, _ in reads]

    async def handler(request: Request) -> Response:
        # the pairs Starlette's `request.query_params` parses (the same `parse_qsl` call), read
        # into plain lists: its multi-dict cost as much again as the parse, for a dozen look-ups
        pairs: dict[str, list[str]] = {}
        for key, value in parse_qsl(request.scope["query_string"].decode("latin-1"), keep_blank_values=True):
            seen = pairs.get(key)
            if seen is None:
                pairs[key] = [value]
            else:
                seen.append(value)
        given: dict[str, Any] = {}
        for name, alias, many in reads:
            values = pairs.get(alias)
            if values:
                given[alias] = values if many else values[-1]  # a scalar: its last value, as `query_params.get`
        try:
            parsed = validate(given)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)],
            ) from None
        values = parsed.__dict__
        kwargs = {name: values[name] for name in names}
        kwargs[request_name] = request
        return await endpoint(**kwargs)

    return handler
