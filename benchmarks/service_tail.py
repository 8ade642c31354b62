"""Where the service's tail at 8 concurrent requests comes from: every request's timeline.

    .venv/bin/python benchmarks/service_tail.py                        # 1,000 memories, 600 requests at 8 concurrent
    .venv/bin/python benchmarks/service_tail.py --home /tmp/store --server-code /tmp/old --out old.json

A closed loop of N clients on one FIFO server gives every request about N service times; a p99
far above that means some requests wait more than one round. To see which, and why, this runs
one worker (exactly the options `viking-bridge serve` passes, uvloop included, in a child
process) with probes that record, on one clock (`time.perf_counter`, CLOCK_MONOTONIC, the same
in every process of the machine):

- the load generator (this file, its own process, `service_load.py`'s raw keep-alive client):
  when each request was written and when its answer was read, tagged by `X-Request-Id`;
- the server: when the request's head reached `data_received` (and how long each
  `data_received` ran); every step of the request's task (each resumption of its coroutine: a
  step ends where the coroutine truly suspends, and the innermost coroutine and line it awaited
  at is recorded) with its thread CPU; when the answer's last byte was handed to the transport;
- everything else the loop thread ran that can hold a request up: the recall audit group
  commit (`ReadRowQueue._on_timer`, and every flush of the read rows with who called it), the
  cyclic garbage collector's passes, and the encoder's inline encodes vs worker-thread encodes.

Reported: latency percentiles from the client; `served_ahead`, for each request the number of
other requests answered between its write and its own answering step (with N clients served
first come, first served it is at most N-1; a request that waited two rounds shows ~2(N-1):
this count does not move with the machine's load, the milliseconds do); and for the median and
the slowest 1% of requests the split of their time: head delivered late (the server was busy
and not reading), waiting for their first step, running, suspended between steps, and answer in
flight; plus how many other requests' steps, group commits and collections ran inside their
window. The server process's CPU per request (from /proc), its threads' CPU, and the load
average are recorded with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

_HERE = Path(__file__).resolve().parent


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the server's probes -----------------------------------------------------------------------
class _Trace:
    def __init__(self) -> None:
        self.requests: dict[str, dict[str, Any]] = {}
        self.events: list[tuple[str, float, float, Any]] = []  # (kind, start, end, detail)
        self.recording = False


_TRACE = _Trace()


def _innermost(coro: Any) -> str:
    """Where a suspended coroutine chain waits: the innermost coroutine's function and line."""
    where = "?"
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            where = f"{frame.f_code.co_filename.rsplit('/', 2)[-1]}:{frame.f_code.co_name}:{frame.f_lineno}"
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return where


class _Stepped:
    """An awaitable that drives `coro` step by step, recording each step's start, end, thread
    CPU and, when it suspends, where: the task's steps, as the event loop runs them."""

    def __init__(self, coro: Any, steps: list[list[Any]]) -> None:
        self.coro, self.steps = coro, steps

    def __await__(self) -> Any:
        send: Any = None
        throw: BaseException | None = None
        while True:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                yielded = self.coro.throw(throw) if throw is not None else self.coro.send(send)
            except StopIteration as stop:
                self.steps.append([started, time.perf_counter(), time.thread_time() - cpu, "done"])
                return stop.value
            except BaseException:
                self.steps.append([started, time.perf_counter(), time.thread_time() - cpu, "raised"])
                raise
            self.steps.append([started, time.perf_counter(), time.thread_time() - cpu, _innermost(self.coro)])
            try:
                send, throw = (yield yielded), None
            except BaseException as exc:  # cancellation, or an exception thrown into the task
                send, throw = None, exc


def _install_probes() -> None:
    from bridge.doors.connection import LimitedHttpToolsProtocol
    from bridge.state import read_rows
    from bridge.state.sqlite.read_rows import GroupCommittedReads

    received = LimitedHttpToolsProtocol.data_received
    headers_complete = LimitedHttpToolsProtocol.on_headers_complete

    def data_received(self: Any, data: bytes) -> None:
        self._tail_t = started = time.perf_counter()
        try:
            received(self, data)
        finally:
            if _TRACE.recording:
                _TRACE.events.append(("io", started, time.perf_counter(), len(data)))

    def on_headers_complete(self: Any) -> None:
        headers_complete(self)
        scope = getattr(self, "scope", None)
        if isinstance(scope, dict):
            scope["tail_head_t"] = getattr(self, "_tail_t", time.perf_counter())

    LimitedHttpToolsProtocol.data_received = data_received  # type: ignore[method-assign]
    LimitedHttpToolsProtocol.on_headers_complete = on_headers_complete  # type: ignore[method-assign]

    on_timer = read_rows.ReadRowQueue._on_timer

    def timed_timer(self: Any) -> None:
        started, rows = time.perf_counter(), len(self.rows)
        try:
            on_timer(self)
        finally:
            if _TRACE.recording:
                _TRACE.events.append(("audit_timer", started, time.perf_counter(), {"rows": rows, "thread": threading.current_thread().name}))

    read_rows.ReadRowQueue._on_timer = timed_timer  # type: ignore[method-assign]
    flush = GroupCommittedReads.flush

    def timed_flush(self: Any) -> None:
        started, rows = time.perf_counter(), len(self._reads.rows) if self._reads is not None else 0
        try:
            flush(self)
        finally:
            if _TRACE.recording and rows:
                _TRACE.events.append(("audit_flush", started, time.perf_counter(), {"rows": rows, "thread": threading.current_thread().name}))

    GroupCommittedReads.flush = timed_flush  # type: ignore[method-assign]

    gc_started: dict[int, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            gc_started[ident] = time.perf_counter()
        elif ident in gc_started and _TRACE.recording:
            _TRACE.events.append(("gc", gc_started.pop(ident), time.perf_counter(), info["generation"]))

    gc.callbacks.append(on_gc)

    try:
        from adapters.shared.embedding import UniversalSentenceEncoder
    except ImportError:
        return
    embed_sync = UniversalSentenceEncoder.embed_sync

    def timed_encode(self: Any, texts: Any) -> Any:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return embed_sync(self, texts)
        finally:
            if _TRACE.recording:
                _TRACE.events.append(("encode", started, time.perf_counter(), {"texts": len(texts), "cpu": time.thread_time() - cpu,
                                                                           "thread": threading.current_thread().name}))

    UniversalSentenceEncoder.embed_sync = timed_encode  # type: ignore[method-assign]


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of each thread of this process by name (the loop's, the encoder's, BLAS's)."""
    tick = os.sysconf("SC_CLK_TCK")
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = names.get(int(task.name)) or "native:" + (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def _traced_app() -> Any:
    """`create_app()` wrapped: each /api/ request's coroutine is driven by `_Stepped`, its
    answer's end recorded; recording starts with the first request tagged `tail-`."""
    from bridge.doors.http.app import create_app

    app = create_app()

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/"):
            await app(scope, receive, send)
            return
        rid = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
        if rid.startswith("tail-"):
            _TRACE.recording = True
        if not _TRACE.recording:
            await app(scope, receive, send)
            return
        row: dict[str, Any] = {"head": scope.get("tail_head_t"), "steps": []}
        _TRACE.requests[rid] = row

        async def timed_send(message: dict[str, Any]) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                row["sent"] = time.perf_counter()

        await _Stepped(app(scope, receive, timed_send), row["steps"])

    return wrapper


def _serve_child(port: int, trace_out: Path) -> int:
    """The server process: one worker, the options `bridge.doors.http.server.serve` passes."""
    _install_probes()
    import uvicorn

    from bridge.doors.connection import uvicorn_options
    from bridge.doors.edge import LOG_CONFIG

    config = uvicorn.Config(
        _traced_app, factory=True, host="127.0.0.1", port=port, log_config=LOG_CONFIG, access_log=False, server_header=False,
        limit_concurrency=None, proxy_headers=False, **uvicorn_options(),
    )
    server = uvicorn.Server(config)

    def stop(signum: int, frame: Any) -> None:  # uvicorn re-raises the SIGTERM it caught once it has shut down
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        server.run()
    finally:
        trace_out.write_text(json.dumps({"requests": _TRACE.requests, "events": _TRACE.events, "loop": type(asyncio.get_event_loop_policy()).__module__,
                                         "threads": _thread_cpu()}))
    return 0


# -- the load generator ------------------------------------------------------------------------
async def _generate(url: str, keys: list[str], requests: int, concurrency: int, max_seconds: float) -> dict[str, Any]:
    from urllib.parse import urlsplit

    load = _module("service_load")
    parts = urlsplit(url)
    connections = [load._RawConnection(parts.hostname or "127.0.0.1", parts.port or 80) for _ in range(concurrency)]
    for key in keys:
        for connection in connections:
            await connection.get("/api/v1/recall?" + urlencode({"query": "warm up"}), key)
    rows: list[list[Any]] = []
    errors = 0
    counter = iter(range(requests))
    deadline = time.perf_counter() + max_seconds

    async def worker(n: int) -> None:
        nonlocal errors
        rng = random.Random(n)
        connection = connections[n]
        for i in counter:
            if time.perf_counter() > deadline:
                return
            rid = f"tail-{n}-{i:06d}"
            query, key = rng.choice(load.QUERIES), rng.choice(keys)
            target = "/api/v1/recall?" + urlencode({"query": query})
            if connection.writer is None:
                connection.reader, connection.writer = await asyncio.open_connection(connection.host, connection.port)
            started = time.perf_counter()
            connection.writer.write(f"GET {target} HTTP/1.1\r\nHost: {connection.host}\r\nX-API-Key: {key}\r\nX-Request-Id: {rid}\r\n\r\n".encode("latin-1"))
            head = await connection.reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next((int(v) for n_, _, v in (line.partition(b":") for line in head.split(b"\r\n")[1:]) if n_.strip().lower() == b"content-length"), 0)
            await connection.reader.readexactly(length)
            rows.append([rid, started, time.perf_counter()])
            errors += status != 200

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    for connection in connections:
        connection.close()
    return {"rows": rows, "errors": errors, "seconds": elapsed, "generator_cpu_s": cpu, "concurrency": concurrency}


# -- the analysis ------------------------------------------------------------------------------
def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _counts(values: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def analyse(client: dict[str, Any], trace: dict[str, Any]) -> dict[str, Any]:
    """Each request's time split into phases, and the median vs the slowest 1% of requests."""
    served = trace["requests"]
    events = trace["events"]
    all_steps = sorted((s[0], s[1], rid) for rid, r in served.items() for s in r["steps"])
    # each request's answering step (its last: the whole recall when it never suspends)
    answered = sorted((r["steps"][-1][0], rid) for rid, r in served.items() if r["steps"])
    rows = []
    for rid, sent, received in client["rows"]:
        r = served.get(rid)
        if r is None or not r["steps"] or r.get("head") is None or r.get("sent") is None:
            continue
        steps = r["steps"]
        first, last = steps[0][0], steps[-1][1]
        running = sum(s[1] - s[0] for s in steps)
        inside = [e for e in events if e[1] < received and e[2] > sent]
        rows.append({
            "rid": rid, "latency_ms": 1000 * (received - sent),
            "head_late_ms": 1000 * (r["head"] - sent),  # written -> the server's data_received (the loop was busy elsewhere)
            "to_first_step_ms": 1000 * (first - r["head"]),  # data_received -> the task's first step (the ready queue)
            "running_ms": 1000 * running, "cpu_ms": 1000 * sum(s[2] for s in steps),
            "suspended_ms": 1000 * ((last - first) - running), "steps": len(steps),
            "suspended_at": [s[3] for s in steps[:-1]],
            "answer_in_flight_ms": 1000 * (received - r["sent"]),
            "after_last_step_ms": 1000 * (r["sent"] - last) if r["sent"] > last else 0.0,
            "other_steps_inside": sum(1 for s0, s1, other in all_steps if other != rid and s0 < received and s1 > sent),
            # requests answered ahead of this one since it was written: 7 at most for 8 clients served first come, first served
            "served_ahead": sum(1 for t, other in answered if other != rid and sent < t < steps[-1][0]),
            "other_step_ms_inside": 1000 * sum(min(s1, received) - max(s0, sent) for s0, s1, other in all_steps if other != rid and s0 < received and s1 > sent),
            "audit_commits_inside": [(e[0], round(1000 * (e[2] - e[1]), 3), e[3]) for e in inside if e[0].startswith("audit") and e[3]],
            "gc_inside": [(round(1000 * (e[2] - e[1]), 3), e[3]) for e in inside if e[0] == "gc"],
        })
    rows.sort(key=lambda row: row["latency_ms"])
    n = len(rows)
    tail = rows[max(0, n - max(1, n // 100)):]
    middle = rows[n // 2 - 2: n // 2 + 3] if n >= 5 else rows

    def mean(key: str, group: list[dict[str, Any]]) -> float:
        return statistics.fmean(row[key] for row in group) if group else float("nan")

    keys = ("latency_ms", "served_ahead", "head_late_ms", "to_first_step_ms", "running_ms", "cpu_ms", "suspended_ms", "answer_in_flight_ms", "other_steps_inside", "other_step_ms_inside")
    encodes = [e for e in events if e[0] == "encode"]
    audit = [e for e in events if e[0].startswith("audit") and e[3] and e[3].get("rows")]
    steps_per_request = [len(r["steps"]) for r in served.values()]
    suspensions: dict[str, int] = {}
    for r in served.values():
        for s in r["steps"][:-1]:
            suspensions[s[3]] = suspensions.get(s[3], 0) + 1
    return {
        "requests": n, "p50_ms": _percentile([r["latency_ms"] for r in rows], 0.5), "p99_ms": _percentile([r["latency_ms"] for r in rows], 0.99),
        "running_ms_p50": _percentile([r["running_ms"] for r in rows], 0.5), "running_ms_p99": _percentile([r["running_ms"] for r in rows], 0.99),
        "median_requests": {k: mean(k, middle) for k in keys}, "slowest_1pct": {k: mean(k, tail) for k in keys},
        "served_ahead": {str(k): v for k, v in sorted(_counts([row["served_ahead"] for row in rows]).items())},
        "slowest": tail[::-1][:5], "steps_per_request": {str(k): steps_per_request.count(k) for k in sorted(set(steps_per_request))},
        "suspended_at": dict(sorted(suspensions.items(), key=lambda kv: -kv[1])[:10]),
        "audit_commits": {"count": len(audit), "ms_p50": _percentile([1000 * (e[2] - e[1]) for e in audit], 0.5),
                          "ms_max": max((1000 * (e[2] - e[1]) for e in audit), default=0.0), "threads": sorted({e[3]["thread"] for e in audit})},
        "gc_passes": len([e for e in events if e[0] == "gc"]), "gc_ms_max": max((1000 * (e[2] - e[1]) for e in events if e[0] == "gc"), default=0.0),
        "encodes": {"count": len(encodes), "cpu_ms_p50": _percentile([1000 * e[3]["cpu"] for e in encodes], 0.5),
                    "wall_ms_p50": _percentile([1000 * (e[2] - e[1]) for e in encodes], 0.5),
                    "on_loop_thread": sum(1 for e in encodes if e[3]["thread"] == "MainThread")},
    }


# -- the driver --------------------------------------------------------------------------------
def _start(home: Path, trace_out: Path, server_code: Path | None) -> tuple[subprocess.Popen, str]:
    profile = _module("service_profile")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, __file__, "--serve-child", str(port), "--trace-out", str(trace_out)]
    process = subprocess.Popen(cmd, env=profile._env(home, server_code), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, _module("service_load").wait_ready(process, f"http://127.0.0.1:{port}", attempts=1200)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=1000)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--requests", type=int, default=600)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-seconds", type=float, default=30.0)
    p.add_argument("--home", type=Path, help="reuse a store seeded by an earlier run (kept)")
    p.add_argument("--server-code", type=Path, help="serve the packages of this checkout (an older commit's `git archive`) instead of this one's")
    p.add_argument("--out", type=Path)
    p.add_argument("--serve-child", type=int, help=argparse.SUPPRESS)
    p.add_argument("--trace-out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--generate", metavar="URL", help=argparse.SUPPRESS)
    p.add_argument("--keys-file", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_child:
        return _serve_child(args.serve_child, args.trace_out)
    if args.generate:
        keys = json.loads(args.keys_file.read_text())
        print(json.dumps(asyncio.run(_generate(args.generate, keys, args.requests, args.concurrency, args.max_seconds))))
        return 0

    load = _module("service_load")
    home = args.home or Path(tempfile.mkdtemp(prefix="vb-service-tail-"))
    keys_file = home / "keys.json"
    if not keys_file.exists():
        keys_file.write_text(json.dumps(asyncio.run(load._seed(home, args.memories, args.users))))
    trace_out = home / f"trace-{os.getpid()}.json"
    loadavg = [list(os.getloadavg())]
    process, url = _start(home, trace_out, args.server_code)
    try:
        cpu = load._tree_cpu_seconds(process.pid)
        out = subprocess.run([sys.executable, __file__, "--generate", url, "--keys-file", str(keys_file), "--requests", str(args.requests),
                              "--concurrency", str(args.concurrency), "--max-seconds", str(args.max_seconds)],
                             capture_output=True, text=True, timeout=args.max_seconds + 120)
        server_cpu = load._tree_cpu_seconds(process.pid) - cpu
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    if out.returncode != 0:
        raise SystemExit(f"load generator failed: {out.stderr[-2000:]}")
    client = json.loads(out.stdout)
    (home / f"client-{os.getpid()}.json").write_text(out.stdout)  # kept beside the server's trace, for a closer look
    loadavg.append(list(os.getloadavg()))
    report = analyse(client, json.loads(trace_out.read_text()))
    report.update({"load_average": loadavg, "server_cpu_ms_per_request": 1000 * server_cpu / max(1, len(client["rows"])),
                   "throughput_rps": len(client["rows"]) / client["seconds"], "errors": client["errors"], "generator_cpu_s": client["generator_cpu_s"],
                   "server_code": str(args.server_code or _HERE.parent), "home": str(home)})
    print(json.dumps({k: v for k, v in report.items() if k != "slowest"}, indent=1))
    for row in report["slowest"]:
        print(json.dumps(row))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
