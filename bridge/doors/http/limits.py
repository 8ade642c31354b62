"""Request limits of the service: body and query size (ASGI middleware) and per-identity rate
(the read deadlines of every door are in bridge/doors/connection.py).

The size limit is enforced while the body is read, not after: a `Content-Length` over the limit
is refused before one byte is read, and a chunked body is cut off as soon as it passes the
limit. The rate limit is a token bucket per identity fingerprint (all sessions of one identity
share it), kept in the worker's memory: it only ever refuses, it never authorises, so it need
not be shared (with N workers an identity gets at most N times the rate).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Awaitable, Callable

from bridge.errors import RequestRateLimited, RequestTooLarge, UnsupportedMediaType

__all__ = ["BodyLimit", "TokenBuckets", "json_body"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def json_body(scope: Scope, body: bytes) -> None:
    """Every body of the API is JSON. A body sent without a Content-Type (curl -d, many quick
    scripts) is read as JSON, as it is meant; one declared as something else is a clear 415 —
    never FastAPI's puzzling "Input should be a valid dictionary"."""
    if not body or scope.get("method") not in ("POST", "PUT", "PATCH") or not scope.get("path", "").startswith("/api/"):
        return
    types = [v.decode("latin-1").strip().lower() for k, v in scope.get("headers", []) if k.lower() == b"content-type"]
    if not types or not types[0]:
        scope["headers"] = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-type"] + [(b"content-type", b"application/json")]
        return
    media = types[0].split(";", 1)[0].strip()
    if media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"the request body is {media}; this API reads JSON bodies: send Content-Type: application/json (curl: -H 'Content-Type: application/json')")


class BodyLimit:
    """Wraps `receive` so that reading more than `max_body` bytes raises `RequestTooLarge`."""

    def __init__(self, max_body: int, max_query: int) -> None:
        self.max_body = max_body
        self.max_query = max_query

    def check_head(self, scope: Scope) -> bool:
        """Refuse a head over the limits; True when it announces a body (Content-Length or
        Transfer-Encoding), False when, by HTTP/1.1's framing, the request has none."""
        declares_body = False
        if len(scope.get("query_string", b"")) > self.max_query:
            raise RequestTooLarge(f"query string is over {self.max_query} bytes", status=414)
        for name, value in scope.get("headers", []):
            if name == b"transfer-encoding":
                declares_body = True
            elif name == b"content-length":
                declares_body = True
                try:
                    length = int(value)
                except ValueError:
                    raise RequestTooLarge("Content-Length is not a number", status=413) from None
                if length > self.max_body:
                    raise RequestTooLarge(f"request body is {length} bytes; the limit is {self.max_body}")
        return declares_body

    def wrap(self, receive: Receive) -> Receive:
        seen = 0

        async def limited() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise RequestTooLarge(f"request body is over {self.max_body} bytes")
            return message

        return limited


class TokenBuckets:
    """`take(key)`: spend one token or raise `RequestRateLimited` with the seconds until one is back."""

    def __init__(self, rate: float, burst: int, *, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.max_keys, self.clock = rate, burst, max_keys, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str) -> None:
        if self.burst <= 0:
            return
        now = self.clock()
        tokens, last = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            raise RequestRateLimited(f"rate limit: {self.burst} requests, refilled at {self.rate:g}/s per identity", retry_after=(1.0 - tokens) / self.rate)
        self._buckets[key] = (tokens - 1.0, now)
        while len(self._buckets) > self.max_keys:  # a forgotten bucket is a full one: only ever lenient for idle keys
            self._buckets.popitem(last=False)
