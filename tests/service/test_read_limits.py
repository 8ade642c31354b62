"""Read limits of every listening door, over a real socket against real server processes: a slow,
incomplete or oversized request is answered (408 / 431) and its connection closed after a bounded
time; a request a real client sends is not touched. One `viking-bridge serve` and one
`viking-bridge mcp --transport http`, each with short limits, shared by the module's tests; every
loop is bounded and every socket is on loopback."""

from __future__ import annotations

import json
import select
import socket
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest

from tests.mcp.mcpkit import spawn_mcp_http
from tests.service.servicekit import Service, spawn_service

LIMITS = {
    "VIKING_BRIDGE_SERVICE_HEADER_TIMEOUT_SECONDS": "1",
    "VIKING_BRIDGE_SERVICE_BODY_TIMEOUT_SECONDS": "1.5",
    "VIKING_BRIDGE_SERVICE_MAX_HEADER_BYTES": "32768",
    "VIKING_BRIDGE_SERVICE_MAX_HEADERS": "64",
}
#: far past every limit above (body 1.5 s + the 2 s backstop grace): a connection still open then
#: was never going to be closed
BOUND_S = 20.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    handle = spawn_service(tmp_path_factory.mktemp("read-limits"), env=LIMITS)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def mcp_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    handle = spawn_mcp_http(tmp_path_factory.mktemp("read-limits-mcp"), env=LIMITS)
    try:
        yield handle
    finally:
        handle.stop()


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=BOUND_S)
    return sock


def _read_until_closed(sock: socket.socket, *, bound: float = BOUND_S) -> tuple[bytes, bool]:
    """Everything the server sends until it closes the connection; (data, closed) — `closed` is
    False if the bound passed with the connection still open."""
    data, deadline = b"", time.monotonic() + bound
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk
    return data, False


def _responses(data: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """The HTTP/1.1 responses in `data` (each with a content-length)."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out


def _send_and_collect(url: str, *chunks: bytes, pause: float = 0.0) -> tuple[list[tuple[int, dict[str, str], bytes]], bool]:
    with _connect(url) as sock:
        for chunk in chunks:
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and stopped reading: what it said is still to be read
            if pause:
                time.sleep(pause)
        data, closed = _read_until_closed(sock)
    return _responses(data), closed


def _head(host: str, method: str = "GET", path: str = "/health", extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}".encode()


def _host(service: Service) -> str:
    return urlsplit(service.url).netloc


# -- the service (API and console share one server) -------------------------------------------

def test_body_shorter_than_its_content_length_is_a_408_problem_and_the_connection_closes(served: Service) -> None:
    key = served.api_key("alice")
    head = _head(_host(served), "POST", "/api/v1/memories", f"X-API-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n")
    responses, closed = _send_and_collect(served.url, head + b'{"content": "only part')
    assert closed, "the connection was held open past the body deadline"
    assert [r[0] for r in responses] == [408], responses
    status, headers, body = responses[0]
    assert headers["content-type"].startswith("application/problem+json") and headers["connection"] == "close"
    problem = json.loads(body)
    assert problem["status"] == 408 and problem["type"].endswith("incomplete-request") and problem["error"] == "IncompleteRequest"


def test_body_sent_a_byte_at_a_time_is_cut_off_by_one_deadline_for_the_whole_body(served: Service) -> None:
    key = served.api_key("alice")
    head = _head(_host(served), "POST", "/api/v1/memories", f"X-API-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n")
    with _connect(served.url) as sock:
        sock.sendall(head)
        data, answered = b"", False
        for n in range(400):  # 400 bytes at 10 a second would take 40 s; every byte resets nothing
            try:
                sock.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                break
            ready, _, _ = select.select([sock], [], [], 0.1)
            if ready:
                more, _ = _read_until_closed(sock)
                data += more
                answered = True
                break
        assert answered, "the server kept reading a body dripped a byte at a time"
        assert n < 100, f"the answer came only after {n} bytes"
    assert [r[0] for r in _responses(data)] == [408]


def test_half_sent_head_is_a_408_and_the_connection_closes(served: Service) -> None:
    responses, closed = _send_and_collect(served.url, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Partial: th")
    assert closed and [r[0] for r in responses] == [408], responses
    assert responses[0][1]["connection"] == "close"


def test_a_connection_that_sends_nothing_is_closed(served: Service) -> None:
    with _connect(served.url) as sock:
        data, closed = _read_until_closed(sock)
    assert closed and data == b""


def test_the_next_request_on_a_kept_alive_connection_has_the_same_head_deadline(served: Service) -> None:
    responses, closed = _send_and_collect(served.url, _head(_host(served)) + b"\r\n" + b"GET /health HTTP/1.1\r\nHost: x\r\n")
    assert closed and [r[0] for r in responses] == [200, 408], responses


def test_a_one_megabyte_header_is_a_431(served: Service) -> None:
    responses, closed = _send_and_collect(served.url, _head(_host(served), extra="X-Big: " + "a" * 1_048_576 + "\r\n\r\n"))
    assert closed and [r[0] for r in responses] == [431], responses
    assert json.loads(responses[0][2])["status"] == 431


def test_ten_thousand_headers_are_a_431(served: Service) -> None:
    many = "".join(f"X-H{n}: v\r\n" for n in range(10_000))
    responses, closed = _send_and_collect(served.url, _head(_host(served), extra=many + "\r\n"))
    assert closed and [r[0] for r in responses] == [431], responses


def test_a_head_over_the_limit_in_one_packet_is_a_431(served: Service) -> None:
    """Complete in one read, so caught where the head is parsed, not while it streams."""
    responses, closed = _send_and_collect(served.url, _head(_host(served), extra="X-Big: " + "a" * 40_000 + "\r\n\r\n"))
    assert closed and [r[0] for r in responses] == [431], responses


def test_what_a_real_client_sends_passes_every_limit(served: Service) -> None:
    key = served.api_key("alice")
    headers = {f"X-Trace-{n}": "t" * 200 for n in range(40)}  # 40 headers, 8 KB: more than browsers send
    with served.client(key, **headers) as c:
        written = c.post("/api/v1/memories", json={"content": "read limits: an ordinary write", "kind": "note"})
        assert written.status_code == 201, written.text
        assert c.get("/api/v1/recall", params={"query": "ordinary write"}).status_code == 200
    # a body that arrives in pieces, each well inside the deadline, is read as one
    body = json.dumps({"content": "read limits: sent in three pieces", "kind": "note"}).encode()
    head = _head(_host(served), "POST", "/api/v1/memories", f"X-API-Key: {key}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    responses, _ = _send_and_collect(served.url, head, body[:10], body[10:20], body[20:], pause=0.2)
    assert [r[0] for r in responses] == [201], responses


def test_a_body_nobody_reads_does_not_hold_the_connection(served: Service) -> None:
    """/health reads no body: it answers, and the connection still closes once the body is late."""
    responses, closed = _send_and_collect(served.url, _head(_host(served), "POST", "/health", "Content-Length: 100\r\n\r\nabc"))
    assert closed, "a connection with an unread, incomplete body was held open"
    assert len(responses) <= 1


# -- the MCP server over streamable HTTP ---------------------------------------------------------

def test_mcp_door_half_sent_head_is_a_408(mcp_served: Service) -> None:
    responses, closed = _send_and_collect(mcp_served.url, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthor")
    assert closed and [r[0] for r in responses] == [408], responses


def test_mcp_door_ten_thousand_headers_are_a_431(mcp_served: Service) -> None:
    many = "".join(f"X-H{n}: v\r\n" for n in range(10_000))
    responses, closed = _send_and_collect(mcp_served.url, _head(_host(mcp_served), "GET", "/ready", many + "\r\n"))
    assert closed and [r[0] for r in responses] == [431], responses


def test_mcp_door_body_shorter_than_its_content_length_is_a_408(mcp_served: Service) -> None:
    token = mcp_served.token("alice")
    head = _head(_host(mcp_served), "POST", "/mcp", f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                 "Accept: application/json, text/event-stream\r\nContent-Length: 300\r\n\r\n")
    responses, closed = _send_and_collect(mcp_served.url, head + b'{"jsonrpc": "2.0", "method": "initial')
    assert closed and [r[0] for r in responses] == [408], responses
