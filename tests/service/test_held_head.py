"""A response's head leaves in one write with its body (bridge/doors/held_head.py), and the bytes
on the wire are exactly uvicorn's, in uvicorn's order.

The connection protocol every door serves with (`LimitedHttpToolsProtocol`) and uvicorn's own
`HttpToolsProtocol` are each given the same requests on a fake transport, and what each writes is
compared byte for byte: a plain response, a HEAD, a body streamed a loop turn later, an app that
fails before and after starting its response, `Expect: 100-continue`, and two pipelined requests.
The plain response must take one write instead of two. The transport wrapper itself is checked for
order around close, half-close, abort and a peer that went away."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from bridge.doors.connection import LimitedHttpToolsProtocol
from bridge.doors.held_head import HeldHeadTransport

BODY = b'{"memories":[' + b",".join(b'{"id":"m%d","content":"x"}' % i for i in range(400)) + b"]}"


class FakeTransport:
    """What the protocol writes, write by write; a loopback peer for the addresses."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.events: list[str] = []
        self.closing = False
        self.protocol: Any = None

    def write(self, data: bytes) -> None:
        assert not self.closing, "written after close"
        self.writes.append(bytes(data))
        self.events.append("write")

    def close(self) -> None:
        self.closing = True
        self.events.append("close")

    def write_eof(self) -> None:
        self.events.append("eof")

    def abort(self) -> None:
        self.closing = True
        self.events.append("abort")

    def can_write_eof(self) -> bool:
        return True

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5555)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_protocol(self) -> Any:
        return self.protocol

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol


async def plain(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()
    body = b"" if scope["method"] == "HEAD" else BODY
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def streamed(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await asyncio.sleep(0.01)  # the body is not ready in the head's turn
    await send({"type": "http.response.body", "body": b"first", "more_body": True})
    await send({"type": "http.response.body", "body": b"second"})


async def fails_first(scope: dict[str, Any], receive: Any, send: Any) -> None:
    raise RuntimeError("before the response")


async def fails_after_head(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"10")]})
    raise RuntimeError("after the head")


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


GET = b"GET /api/v1/recall?query=x HTTP/1.1\r\nHost: a\r\nX-API-Key: k\r\n\r\n"


async def _serve(protocol_class: type[HttpToolsProtocol], app: Any, *chunks: bytes) -> FakeTransport:
    loop = asyncio.get_running_loop()
    config = Config(app, log_config=None, access_log=False, server_header=False, date_header=False)
    config.load()
    transport = FakeTransport()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport.protocol = protocol
    protocol.connection_made(transport)  # type: ignore[arg-type]
    for chunk in chunks:
        protocol.data_received(chunk)
        await asyncio.sleep(0)
    for _ in range(100):  # every task of the connection done, every held byte written
        await asyncio.sleep(0.005)
        if not protocol.tasks:
            break
    await asyncio.sleep(0)
    protocol.connection_lost(None)
    return transport


CASES = {
    "plain": (plain, [GET]),
    "head": (plain, [GET.replace(b"GET", b"HEAD")]),
    "streamed": (streamed, [GET]),
    "fails before the response": (fails_first, [GET]),
    "fails after the head": (fails_after_head, [GET]),
    "100-continue": (echo, [b"POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", b"hello"]),
    "pipelined": (plain, [GET + GET.replace(b"query=x", b"query=y")]),
    "connection close": (plain, [GET.replace(b"Host: a\r\n", b"Host: a\r\nConnection: close\r\n")]),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_the_same_bytes_in_the_same_order_as_uvicorn_writes_them(case: str) -> None:
    app, chunks = CASES[case]
    ours = await _serve(LimitedHttpToolsProtocol, app, *chunks)
    uvicorns = await _serve(HttpToolsProtocol, app, *chunks)
    assert b"".join(ours.writes) == b"".join(uvicorns.writes)
    assert b"".join(ours.writes).startswith(b"HTTP/1.1 ")
    assert ours.events.count("close") == uvicorns.events.count("close")


async def test_a_plain_response_is_one_write_instead_of_two() -> None:
    ours = await _serve(LimitedHttpToolsProtocol, plain, GET)
    uvicorns = await _serve(HttpToolsProtocol, plain, GET)
    assert len(uvicorns.writes) == 2 and len(ours.writes) == 1
    assert ours.writes[0].endswith(BODY)


async def test_held_bytes_go_first_and_alone_at_the_next_turn() -> None:
    raw = FakeTransport()
    held = HeldHeadTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.write(b"a")
    assert raw.writes == [b"a"]  # not armed: straight through
    held.hold_next_write()
    held.write(b"head")
    assert raw.writes == [b"a"]
    held.write(b"body")
    assert raw.writes == [b"a", b"headbody"]
    held.hold_next_write()
    held.write(b"alone")
    await asyncio.sleep(0)
    assert raw.writes == [b"a", b"headbody", b"alone"]


@pytest.mark.parametrize("ending", ["close", "write_eof", "abort"])
async def test_held_bytes_are_written_before_the_connection_ends(ending: str) -> None:
    raw = FakeTransport()
    held = HeldHeadTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.hold_next_write()
    held.write(b"head")
    getattr(held, ending)()
    assert raw.events == ["write", {"close": "close", "write_eof": "eof", "abort": "abort"}[ending]] and raw.writes == [b"head"]
    await asyncio.sleep(0)
    assert raw.writes == [b"head"]  # and only once


async def test_held_bytes_are_dropped_when_the_peer_is_gone() -> None:
    raw = FakeTransport()
    held = HeldHeadTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    held.hold_next_write()
    held.write(b"head")
    raw.closing = True  # the connection was lost meanwhile
    await asyncio.sleep(0)
    assert raw.writes == []
