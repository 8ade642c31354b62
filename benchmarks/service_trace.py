"""Where a served recall's wall time goes, step by step, beside the library and the round-trip floor.

    .venv/bin/python benchmarks/service_trace.py                    # 1,000 memories, 600 recalls a side
    .venv/bin/python benchmarks/service_trace.py --home /tmp/store --rounds 6 --out bench-results/trace.json

`service_load.py` says how much later a served recall answers than the library's; `service_profile.py`
splits the server's CPU into the library's and the door's. This says where, on the wall clock, the
difference lies. One sequential client sends each request with its own `X-Request-Id`; the
server (one worker, the options `viking-bridge serve` passes, in a child process) stamps the
request at each step with the system-wide monotonic clock (`time.perf_counter_ns`, the same clock
in both processes) and writes the stamps at shutdown; the two are joined by request id:

  client -> server      the client's send, the kernel, the server's wake-up and read
  parse, schedule       httptools' parse of the head, uvicorn's scope and task, one loop turn
  to the edge           Starlette's and FastAPI's middleware, down to the edge
  edge, before auth     request id, limits, the request's turn, header decoding
  authentication        the credential verified (API key: lookup, HMAC, revocation)
  query -> handler      the direct route, the query string parsed and validated
  handler -> execute    the caller check, the operation built, the request's timeout
  execute               `MemoryBridge.execute`: the library's recall
  execute -> serialise  back out to the route
  serialise             the response model and its JSON
  send                  the response object, the ASGI send chain, uvicorn's head, the write
  server -> client      the kernel, the client's wake-up, its read of the response
and, outside the latency, what the server does after the write (metrics, access log).

Two more figures come from the same minutes, in rotated rounds: the library in this process
(`MemoryBridge.recall` on the same store, identities and queries: what the service is measured
against), and the round-trip floor: the same client against a server that answers every request
at once with canned bytes of a recall response's size (uvloop, no HTTP framework): what any HTTP
service costs on this machine before it does anything. Each served side and floor is measured
with two clients: `asyncio` (`service_load.py`'s raw keep-alive client, what its figures use) and
`blocking` (one socket, `sendall` and `recv`: the least a client can add).

Stamps are taken by wrapping the functions named above in the server process; a stamp costs
about a microsecond. Figures are medians per step (the means add up to the mean total).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # the sibling benchmark whose store, identities, queries and helpers this shares
import service_load as load

#: (step name, stamp it starts at, stamp it ends at); "sent" is the last write of the response
STEPS = (
    ("client -> server", "client_sent", "recv"),
    ("parse, schedule", "recv", "app"),
    ("to the edge", "app", "edge"),
    ("edge, before auth", "edge", "auth0"),
    ("authentication", "auth0", "auth1"),
    ("query -> handler", "auth1", "handler"),
    ("handler -> execute", "handler", "exec0"),
    ("execute", "exec0", "exec1"),
    ("execute -> serialise", "exec1", "out0"),
    ("serialise", "out0", "out1"),
    ("send", "out1", "sent"),
    ("server -> client", "sent", "client_done"),
)


# -- the server child: the service with stamps ------------------------------------------------
def _stamped_app(records: dict[str, dict[str, int]]) -> Any:
    """`create_app()` with every step stamped; `records` gets each API request's stamps by id."""
    import bridge.doors.http.app as app_module
    import bridge.doors.http.routes.recall as recall_route
    from bridge.doors import connection, held_head
    from bridge.doors.http import auth
    from bridge.facade import MemoryBridge

    now = time.perf_counter_ns
    current: dict[str, int] = {}

    def before(owner: Any, name: str, stamp: str) -> None:
        inner = getattr(owner, name)

        async def stamped(*args: Any, **kwargs: Any) -> Any:
            current[stamp] = now()
            return await inner(*args, **kwargs)

        setattr(owner, name, stamped)

    def around(owner: Any, name: str, start: str, end: str, cpu: str | None = None) -> None:
        inner = getattr(owner, name)
        is_async = asyncio.iscoroutinefunction(inner)

        def finish(cpu_started: int) -> None:
            current[end] = now()
            if cpu is not None:
                current[cpu] = time.thread_time_ns() - cpu_started

        if is_async:
            async def stamped(*args: Any, **kwargs: Any) -> Any:
                current[start], cpu_started = now(), time.thread_time_ns()
                try:
                    return await inner(*args, **kwargs)
                finally:
                    finish(cpu_started)
        else:
            def stamped(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
                current[start], cpu_started = now(), time.thread_time_ns()
                try:
                    return inner(*args, **kwargs)
                finally:
                    finish(cpu_started)
        setattr(owner, name, stamped)

    received = connection.LimitedHttpToolsProtocol.data_received

    def data_received(self: Any, data: bytes) -> None:
        current.clear()
        current["recv"], current["cpu_recv"] = now(), time.thread_time_ns()
        received(self, data)

    connection.LimitedHttpToolsProtocol.data_received = data_received  # type: ignore[method-assign]
    write = held_head.HeldHeadTransport.write

    def written(self: Any, data: bytes) -> None:
        write(self, data)
        if "exec1" in current:
            current["sent"] = now()  # the last write of the response wins

    held_head.HeldHeadTransport.write = written  # type: ignore[method-assign]
    before(app_module.EdgeMiddleware, "__call__", "edge")
    around(auth.EdgeAuthenticator, "authenticate", "auth0", "auth1")
    before(recall_route, "_recall", "handler")  # looked up by name at call time: the query is parsed and validated by then
    around(MemoryBridge, "execute", "exec0", "exec1", cpu="exec_cpu")
    around(recall_route, "recall_out", "out0", "out1")

    app = app_module.create_app()

    async def outermost(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/"):
            await app(scope, receive, send)
            return
        current["app"] = now()
        await app(scope, receive, send)
        current["done"], current["cpu_done"] = now(), time.thread_time_ns()
        request_id = dict(scope["headers"]).get(b"x-request-id", b"").decode()
        records[request_id] = dict(current)

    return outermost


def _serve_child(port: int, out: Path) -> int:
    import uvicorn

    from bridge.doors.connection import uvicorn_options
    from bridge.doors.edge import LOG_CONFIG

    records: dict[str, dict[str, int]] = {}
    config = uvicorn.Config(_stamped_app(records), host="127.0.0.1", port=port, log_config=LOG_CONFIG, access_log=False, server_header=False,
                            limit_concurrency=None, proxy_headers=False, **uvicorn_options())

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        uvicorn.Server(config).run()
    finally:
        out.write_text(json.dumps(records))
    return 0


def _floor_child(port: int, body_bytes: int) -> int:
    """A server that answers every request head at once with canned bytes of `body_bytes`."""
    import uvloop

    body = b"x" * body_bytes
    answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)

    class Canned(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport, self.seen = transport, b""

        def data_received(self, data: bytes) -> None:
            self.seen += data
            while b"\r\n\r\n" in self.seen:
                _, _, self.seen = self.seen.partition(b"\r\n\r\n")
                self.transport.write(answer)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Canned, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    uvloop.run(main())
    return 0


# -- the clients --------------------------------------------------------------------------------
class BlockingClient:
    """One keep-alive connection over a blocking socket: `sendall`, then `recv` until the answer's
    Content-Length is in (GET only): the least a client can add to a round trip. The same
    interface as `service_load.py`'s asyncio client, but not awaited; `body` is the last answer's."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.body = b""

    def get(self, target: str, key: str, headers: dict[str, str] | None = None) -> int:
        self.sock.sendall(load.request_head("127.0.0.1", self.port, target, key, headers))
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, _, body = data.partition(b"\r\n\r\n")
        status, length = load.response_head(head + b"\r\n\r\n")
        while len(body) < length:
            body += self._recv()
        self.body = body
        return status

    def _recv(self) -> bytes:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


async def _get(client: Any, target: str, key: str, headers: dict[str, str] | None = None) -> int:
    """The status of one GET by either client (the blocking one is not awaited)."""
    return client.get(target, key, headers) if isinstance(client, BlockingClient) else await client.get(target, key, headers)


async def _round_trips(client: Any, keys: list[str], queries: list[str], count: int, rng: random.Random, stamps: dict[str, tuple[int, int]] | None) -> list[float]:
    """`count` sequential recalls; each one's client stamps under its request id when `stamps` is given."""
    latencies = []
    for _ in range(count):
        request_id = uuid.uuid4().hex
        target = "/api/v1/recall?" + urlencode({"query": rng.choice(queries)})
        started = time.perf_counter_ns()
        status = await _get(client, target, rng.choice(keys), {"X-Request-Id": request_id})
        finished = time.perf_counter_ns()
        if status != 200:
            raise RuntimeError(f"a recall answered {status}")
        latencies.append((finished - started) / 1e6)
        if stamps is not None:
            stamps[request_id] = (started, finished)
    return latencies


# -- the run --------------------------------------------------------------------------------------
def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def _measure(home: Path, keys: list[str], requests: int, rounds: int, serve_port: int, floor_port: int) -> dict[str, Any]:
    bridge, store, ids = await load.open_warm_bridge(home, keys)
    rng = random.Random(5)
    clients: dict[str, Any] = {
        "served asyncio": load._RawConnection("127.0.0.1", serve_port), "served blocking": BlockingClient(serve_port),
        "floor asyncio": load._RawConnection("127.0.0.1", floor_port), "floor blocking": BlockingClient(floor_port),
    }
    for name, client in clients.items():  # every key's first request, and the connections, before anything is timed
        for key in keys:
            status = await _get(client, "/api/v1/recall?query=warm", key)
            if status != 200:
                raise RuntimeError(f"{name}: a warm-up recall answered {status}")
    sides = ["in-process", *clients]
    latencies: dict[str, list[float]] = {side: [] for side in sides}
    stamps: dict[str, dict[str, tuple[int, int]]] = {side: {} for side in clients if side.startswith("served")}
    per_round = max(1, requests // rounds)
    for round_ in range(rounds):
        for side in sides[round_ % len(sides):] + sides[:round_ % len(sides)]:  # rotated: each side goes first in turn
            if side == "in-process":
                for _ in range(per_round):
                    started = time.perf_counter_ns()
                    await bridge.recall(rng.choice(ids), rng.choice(load.QUERIES))
                    latencies[side].append((time.perf_counter_ns() - started) / 1e6)
            else:
                latencies[side] += await _round_trips(clients[side], keys, load.QUERIES, per_round, rng, stamps.get(side))
    for client in clients.values():
        client.close()
    await bridge.aclose()
    store.close()
    return {"latencies_ms": latencies, "client_stamps": stamps}


def _steps(records: dict[str, dict[str, int]], client_stamps: dict[str, tuple[int, int]]) -> dict[str, Any]:
    rows = []
    for request_id, (sent, done) in client_stamps.items():
        record = records.get(request_id)
        if record is None:
            raise RuntimeError(f"request {request_id} has no server stamps")
        rows.append({**record, "client_sent": sent, "client_done": done})
    steps: dict[str, Any] = {}
    for name, start, end in STEPS:
        values = [(r[end] - r[start]) / 1e3 for r in rows]
        steps[name] = {"p50_us": _median(values), "mean_us": statistics.fmean(values)}
    after = [(r["done"] - r["sent"]) / 1e3 for r in rows]
    door_cpu = [(r["cpu_done"] - r["cpu_recv"] - r["exec_cpu"]) / 1e3 for r in rows]
    server = [(r["sent"] - r["recv"] - (r["exec1"] - r["exec0"])) / 1e3 for r in rows]
    return {
        "requests": len(rows), "steps": steps,
        "after_the_response_us": {"p50": _median(after), "mean": statistics.fmean(after)},
        "door_on_the_path_us": {"p50": _median(server), "mean": statistics.fmean(server)},  # the server's steps before the write, execute left out
        "door_cpu_us": {"p50": _median(door_cpu), "mean": statistics.fmean(door_cpu)},  # the server thread's CPU from the read to the end, execute left out
        "execute_cpu_us": {"p50": _median([r["exec_cpu"] / 1e3 for r in rows])},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=1000)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--requests", type=int, default=600, help="recalls per side (in-process, each client served, each client on the floor)")
    p.add_argument("--rounds", type=int, default=6, help="rotated rounds the sides take turns in")
    p.add_argument("--home", type=Path, help="reuse a store seeded by an earlier run (kept)")
    p.add_argument("--out", type=Path)
    p.add_argument("--serve-child", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--floor-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_child:
        return _serve_child(int(args.serve_child[0]), Path(args.serve_child[1]))
    if args.floor_child:
        return _floor_child(*args.floor_child)

    home = args.home or Path(tempfile.mkdtemp(prefix="vb-service-trace-"))
    keys_file = home / "keys.json"
    if not keys_file.exists():
        keys_file.write_text(json.dumps(asyncio.run(load._seed(home, args.memories, args.users))))
    keys = json.loads(keys_file.read_text())
    serve_port, floor_port = load.free_port(), load.free_port()
    scratch = tempfile.TemporaryDirectory(prefix="vb-trace-")  # the server's stamps, read once it has stopped
    stamps_file = Path(scratch.name) / "stamps.json"
    report: dict[str, Any] = {"load_average_start": list(os.getloadavg()), "home": str(home)}
    server = subprocess.Popen([sys.executable, __file__, "--serve-child", str(serve_port), str(stamps_file)], env=load.server_env(home),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    floor: subprocess.Popen | None = None
    try:
        load.wait_ready(server, f"http://127.0.0.1:{serve_port}", attempts=1200)
        probe = BlockingClient(serve_port)
        probe.get("/api/v1/recall?" + urlencode({"query": load.QUERIES[0]}), keys[0])
        probe.close()
        floor = subprocess.Popen([sys.executable, __file__, "--floor-child", str(floor_port), str(len(probe.body))], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(floor, floor_port)
        measured = asyncio.run(_measure(home, keys, args.requests, args.rounds, serve_port, floor_port))
    finally:
        for child in (server, floor):
            if child is not None:
                child.send_signal(signal.SIGTERM)
                child.wait(60)
    records = json.loads(stamps_file.read_text())
    scratch.cleanup()
    report["load_average_end"] = list(os.getloadavg())
    report["p50_ms"] = {side: _median(values) for side, values in measured["latencies_ms"].items()}
    report["served"] = {side: _steps(records, stamps) for side, stamps in measured["client_stamps"].items()}
    p50 = report["p50_ms"]
    report["minus_in_process_ms"] = {side: p50[side] - p50["in-process"] for side in p50 if side.startswith("served")}
    report["floor_share_ms"] = {client: p50[f"floor {client}"] for client in ("asyncio", "blocking")}
    _print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


def _wait_port(process: subprocess.Popen, port: int) -> None:
    for _ in range(200):
        if process.poll() is not None:
            raise RuntimeError("the floor server stopped before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the floor server never listened")


def _print(report: dict[str, Any]) -> None:
    p50 = report["p50_ms"]
    print(f"load average at start {report['load_average_start']}, at end {report['load_average_end']}")
    print("p50 ms, the same minutes in rotated rounds: " + ", ".join(f"{side} {value:.3f}" for side, value in p50.items()))
    for side, delta in report["minus_in_process_ms"].items():
        print(f"{side}: p50 minus in-process {delta:+.3f} ms, of which the round-trip floor of this client {p50['floor ' + side.split()[1]]:.3f} ms")
    for side, traced in report["served"].items():
        print(f"\n{side}: {traced['requests']} requests, steps (p50 / mean us)")
        for name, figures in traced["steps"].items():
            print(f"  {name:<22} {figures['p50_us']:8.1f} {figures['mean_us']:8.1f}")
        print(f"  the door on the path (server steps before the write, execute left out): p50 {traced['door_on_the_path_us']['p50']:.1f} us; "
              f"after the response {traced['after_the_response_us']['p50']:.1f} us; door CPU {traced['door_cpu_us']['p50']:.1f} us, execute CPU {traced['execute_cpu_us']['p50']:.1f} us")


if __name__ == "__main__":
    sys.exit(main())
