"""Read limits at the connection, for every listening door (the service with its console, the MCP
server over HTTP): what uvicorn itself does not bound.

uvicorn's httptools protocol reads a request head with no deadline and no size or count limit, and
a body with no deadline: a client that sends half a head, drips a body a byte at a time or
announces more than it sends holds its connection (and, for a body, the worker task) for ever; a
1 MB header or 10,000 headers are parsed and handed to the app. Its `timeout_keep_alive` runs only
between requests and is cancelled by the first byte of the next one; h11's
`h11_max_incomplete_event_size` bounds the head's size only, answers it as a 400, and has no
deadline either. So `LimitedHttpToolsProtocol` adds, per connection:

- a head deadline: the request line and headers must be complete `header_timeout_seconds` after
  their first byte (or after connecting): else 408 and the connection is closed (closed without an
  answer when nothing at all was sent);
- a head size and a header count limit, counted while the head arrives (a head never completes
  into memory past the limit): over either, 431 and the connection is closed;
- a body backstop: a body still incomplete `body_timeout_seconds` (+ a short grace) after its head
  closes the connection. The app-level guard (`read_deadline`, used by the service's edge
  and by `BodyDeadline` for the MCP door) answers 408 first whenever the app is waiting for that
  body; the backstop also covers a body nobody reads.

Never answers for the app: a request within the limits reaches it byte for byte as before.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Awaitable, Callable, cast

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from bridge.doors.held_head import HeldHeadTransport
from bridge.errors import ConfigurationError, IncompleteRequest

__all__ = ["ReadLimits", "connection_limits", "read_deadline", "LimitedHttpToolsProtocol", "BodyDeadline", "uvicorn_options"]

#: the protocol class by import path: uvicorn's worker processes import it themselves
PROTOCOL = "bridge.doors.connection:LimitedHttpToolsProtocol"
#: the app-level 408 comes first; the connection is closed this much later if the body is still short
BACKSTOP_GRACE_SECONDS = 2.0
#: after a refusal the server stops sending and reads (and drops) what the client still sends this
#: long before closing: closing with unread bytes would reset the connection, and a reset can
#: destroy the answer before the client reads it
LINGER_SECONDS = 2.0

_REASONS = {408: "Request Timeout", 431: "Request Header Fields Too Large"}


class ReadLimits(BaseSettings):
    """`VIKING_BRIDGE_SERVICE_{HEADER_TIMEOUT_SECONDS, BODY_TIMEOUT_SECONDS, MAX_HEADER_BYTES,
    MAX_HEADERS}`: the service's settings inherit these, and the MCP door reads the same ones."""

    model_config = SettingsConfigDict(env_prefix="VIKING_BRIDGE_SERVICE_", extra="ignore", frozen=True)

    header_timeout_seconds: float = Field(10.0, gt=0, le=3600)
    body_timeout_seconds: float = Field(60.0, gt=0, le=3600)
    max_header_bytes: int = Field(65_536, ge=4096, le=16 * 1_048_576)
    max_headers: int = Field(100, ge=16, le=10_000)


@functools.lru_cache(maxsize=1)
def connection_limits() -> ReadLimits:
    """The limits from the environment, read once per process (each uvicorn worker reads its own)."""
    try:
        return ReadLimits()
    except ValidationError as exc:
        problems = "; ".join(f"VIKING_BRIDGE_SERVICE_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid service configuration: {problems}") from None


Receive = Callable[[], Awaitable[dict[str, Any]]]


def read_deadline(receive: Receive, seconds: float) -> Receive:
    """`receive` that raises `IncompleteRequest` once the body has taken `seconds` in all since this
    call (made as the head is complete): a deadline on the whole body, so a byte a second does not
    reset it. Once the body is complete, `receive` is passed through untimed (an app may wait on it
    for the client's disconnect as long as its response lasts)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    complete = False

    async def timed() -> dict[str, Any]:
        nonlocal complete
        if complete:
            return await receive()
        try:  # asyncio.timeout, not wait_for: no extra task (and event-loop turn) per read
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            raise IncompleteRequest(f"the request body was not complete within {seconds:g} s") from None
        if message["type"] != "http.request" or not message.get("more_body"):
            complete = True
        return message

    return timed


def uvicorn_options() -> dict[str, Any]:
    """What every door passes to uvicorn: the limited protocol (h11's own head limit set alike)."""
    return {"http": PROTOCOL, "h11_max_incomplete_event_size": connection_limits().max_header_bytes}


def _raw_problem(status: int, detail: str) -> bytes:
    """The refusal as RFC 9457 problem+json, in the shape of the service's problems
    (bridge/doors/http/problems.py); written here because the connection has no app to ask."""
    slug, error = ("incomplete-request", "IncompleteRequest") if status == 408 else ("header-fields-too-large", "RequestHeaderFieldsTooLarge")
    body = {"type": "urn:viking-bridge:problem:" + slug, "title": _REASONS[status], "status": status, "detail": detail, "error": error}
    raw = json.dumps(body).encode()
    return b"".join([
        f"HTTP/1.1 {status} {_REASONS[status]}\r\n".encode(), b"content-type: application/problem+json\r\n",
        b"content-length: ", str(len(raw)).encode(), b"\r\n", b"connection: close\r\n\r\n", raw,
    ])


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a head deadline, head limits and a body backstop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = connection_limits()
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._in_head = True  # waiting for, or reading, a request head
        self._head_bytes = 0
        self._header_count = 0
        self._head_started = False  # the parser has seen the start of a request head
        self._refused = False

    # -- connection events
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # every write of the connection goes through it: a response's head leaves with its body (held_head.py)
        # duck-typed: every Transport method the protocol calls, held writes in front (a cast, not a subclass,
        # so an unlisted method reaches the real transport rather than Transport's NotImplementedError)
        super().connection_made(cast(asyncio.Transport, HeldHeadTransport(transport, self.loop)))
        self._arm_head_timer()  # a connection that never sends a byte is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel(head=True, body=True)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_timer is None:
                self._arm_head_timer()
        super().data_received(data)
        if self._in_head and not self._refused and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(431, f"the request head is over {self.limits.max_header_bytes} bytes")

    # -- parser callbacks
    def on_message_begin(self) -> None:
        self._header_count, self._head_started = 0, True
        if self._head_timer is None:
            self._arm_head_timer()  # a pipelined head that came with the previous request's bytes
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        if not self._refused:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._refused:
            return
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            self._refuse(431, f"the request has over {self.limits.max_headers} header fields")
            return
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        self._in_head = False
        self._cancel(head=True)
        size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if size > self.limits.max_header_bytes:
            self._refuse(431, f"the request head is over {self.limits.max_header_bytes} bytes")
            return
        self.transport.hold_next_write()  # this request's response head waits for its body's first bytes
        super().on_headers_complete()
        self._body_timer = self.loop.call_later(self.limits.body_timeout_seconds + BACKSTOP_GRACE_SECONDS, self._body_expired)

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._cancel(body=True)
        self._in_head, self._head_bytes, self._head_started = True, 0, False  # what follows is the next head
        super().on_message_complete()

    def timeout_keep_alive_handler(self) -> None:
        if not self._head_started:  # idle between requests: uvicorn's keep-alive closes it
            super().timeout_keep_alive_handler()

    def send_400_response(self, msg: str) -> None:
        if not self._refused:
            self._cancel(head=True, body=True)
            super().send_400_response(msg)

    # -- limits
    def _arm_head_timer(self) -> None:
        self._cancel(head=True)
        self._head_timer = self.loop.call_later(self.limits.header_timeout_seconds, self._head_expired)

    def _cancel(self, *, head: bool = False, body: bool = False) -> None:
        if head and self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if body and self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _mine(self) -> bool:
        """The connection is still this protocol's (not handed on, e.g. to a WebSocket protocol)."""
        return not self.transport.is_closing() and self.transport.get_protocol() is self

    def _head_expired(self) -> None:
        self._head_timer = None
        if self._refused or not self._mine() or not self._in_head:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm_head_timer()  # a pipelined head waits behind a request still answered
            return
        if self._head_bytes == 0 and not self._head_started:
            self._cancel(body=True)
            self.transport.close()  # nothing asked: nobody to answer
            return
        self._refuse(408, f"the request head was not complete within {self.limits.header_timeout_seconds:g} s")

    def _body_expired(self) -> None:
        self._body_timer = None
        if not self._in_head and self._mine():
            self._refused = True
            self.transport.close()  # the app's 408 had its chance; a body nobody waits for ends here

    def _refuse(self, status: int, detail: str) -> None:
        self._refused = True
        self._cancel(head=True, body=True)
        if self.transport.is_closing():
            return
        self.transport.write(_raw_problem(status, detail))
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()

    def eof_received(self) -> bool | None:
        return None  # the client is done sending: close (after a refusal, that ends the linger early)


class BodyDeadline:
    """ASGI middleware for a door whose app reads its own bodies (the MCP server): a body that is
    not complete `seconds` after its head is answered 408 (Connection: close); the app sees the
    request as disconnected, and anything it sends after the deadline is dropped."""

    def __init__(self, app: Any, seconds: float | None = None) -> None:
        self.app = app
        self.seconds = connection_limits().body_timeout_seconds if seconds is None else seconds

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        timed = read_deadline(receive, self.seconds)
        expired = started = False

        async def guarded_receive() -> dict[str, Any]:
            nonlocal expired
            try:
                return await timed()
            except IncompleteRequest:
                expired = True
                return {"type": "http.disconnect"}

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal started
            if expired:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if not expired:
                raise
        if expired and not started:
            raw = _raw_problem(408, f"the request body was not complete within {self.seconds:g} s")
            head, body = raw.split(b"\r\n\r\n", 1)
            headers = [tuple(line.split(b": ", 1)) for line in head.split(b"\r\n")[1:]]
            await send({"type": "http.response.start", "status": 408, "headers": headers})
            await send({"type": "http.response.body", "body": body})
