"""Where the service's CPU goes per recall: the serve process's request path, profiled.

    .venv/bin/python benchmarks/service_profile.py                       # 1,000 memories, 600 requests a pass
    .venv/bin/python benchmarks/service_profile.py --profile-out bench-results/serve.pstats --top 40
    git archive OLD | tar -x -C /tmp/old && .venv/bin/python benchmarks/service_profile.py --home /tmp/store --server-code /tmp/old
                                                                         # an older commit's server, same store and generator

Wall-clock latency on a shared, loaded machine mostly measures the other processes; CPU time
does not. So this reports, on the same store, identities and queries as `service_load.py`:

1. in-process: CPU seconds per `MemoryBridge.recall` (this process's `process_time`, sequential);
2. the service with one worker (`uvicorn.Server` with exactly the options `viking-bridge serve`
   passes, in a child process) driven by `service_load.py`'s load generator in its own process:
   the server's CPU seconds (from /proc) per request served, sequential and at `--concurrency`;
3. that server CPU split, in the served process itself, into the time inside
   `MemoryBridge.execute`, the recall audit rows' group commit (a timer, outside any request),
   and the rest: what the HTTP door (uvicorn, the ASGI app, authentication, encoding, logging)
   adds to a recall — the load-independent counterpart of "service p50 minus in-process p50"
   (exact for the sequential pass; with concurrent requests, time other tasks spend while one
   awaits inside `execute` is counted as inside); and, across all of it, the CPU of the cyclic
   garbage collector's passes by generation (a pass runs inside whatever allocated last);
4. with `--profile-out`, one more pass with cProfile enabled inside the server process (its event
   loop thread, which runs the whole request path), and the top functions by own and by
   cumulative time printed. The profiled pass's CPU is inflated by the profiler and is not used
   for (2).

The generator uses `service_load.py`'s raw keep-alive client by default (`--client httpx` for
httpx): it takes a fifth of httpx's CPU from the two cores it shares with the server.
`--server-code DIR` serves another checkout's packages (put first on the server's PYTHONPATH) with
this script, store and generator, so old and new code can alternate in fresh processes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.util
import json
import os
import pstats
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

_LOAD = Path(__file__).with_name("service_load.py")


def _service_load() -> Any:
    spec = importlib.util.spec_from_file_location("service_load", _LOAD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _env(home: Path, server_code: Path | None = None) -> dict[str, str]:
    env = _service_load().server_env(home)
    if server_code is not None:  # another checkout's packages first: old and new code served from one script, one store
        env["PYTHONPATH"] = os.pathsep.join([str(server_code.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


_PROFILER: cProfile.Profile | None = None


def _profiled_app() -> Any:
    """`create_app()` wrapped so that the profiler starts with the first API request: start-up
    (imports, the embedder's weights, pydantic schemas) is left out of the profile."""
    from bridge.doors.http.app import create_app

    app = create_app()

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if _PROFILER is not None and scope["type"] == "http" and scope["path"].startswith("/api/") and not getattr(wrapper, "on", False):
            wrapper.on = True  # type: ignore[attr-defined]
            _PROFILER.enable()
        await app(scope, receive, send)

    return wrapper


def _account_execute(out: Path) -> Callable[[], None]:
    """Count the thread CPU time spent inside `MemoryBridge.execute` (the library's part of every
    request); what the server spends beyond it is the door's. Exact for one request at a time."""
    from bridge.facade import MemoryBridge

    inner = MemoryBridge.execute
    totals = {"execute_cpu_s": 0.0, "calls": 0}

    async def execute(self: Any, identity: Any, op: Any) -> Any:
        started = time.thread_time()
        try:
            return await inner(self, identity, op)
        finally:
            totals["execute_cpu_s"] += time.thread_time() - started
            totals["calls"] += 1

    MemoryBridge.execute = execute  # type: ignore[method-assign]
    # the recall audit rows' group commit runs on a timer, outside any request: library work too
    from bridge.state.sqlite.read_rows import ReadRowQueue

    on_timer = ReadRowQueue._on_timer
    totals["audit_flush_cpu_s"] = 0.0

    def timed_flush(self: Any) -> None:
        started = time.thread_time()
        try:
            on_timer(self)
        finally:
            totals["audit_flush_cpu_s"] += time.thread_time() - started

    ReadRowQueue._on_timer = timed_flush  # type: ignore[method-assign]
    # the cyclic garbage collector: its passes run inside whatever allocates at that moment
    # (mostly a request), so they are counted here too, by generation, wherever they run
    totals["gc_cpu_s"] = 0.0
    totals["gc_passes"] = [0, 0, 0]
    totals["gc_longest_s"] = [0.0, 0.0, 0.0]  # the longest single pass of each generation: a pause every request in flight waits out
    gc_started: dict[int, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            gc_started[ident] = time.thread_time()
        elif ident in gc_started:
            took = time.thread_time() - gc_started.pop(ident)
            generation = info["generation"]
            totals["gc_cpu_s"] += took
            totals["gc_passes"][generation] += 1
            totals["gc_longest_s"][generation] = max(totals["gc_longest_s"][generation], took)
            if generation == 2:
                totals.setdefault("gc_full_passes_ms", []).append(round(1000 * took, 2))

    gc.callbacks.append(on_gc)
    return lambda: out.write_text(json.dumps(totals))


def _stub_recalls() -> None:
    """Each (identity, operation) runs once; every later request for it is answered with that
    result: what is left of the server's CPU is the door's alone, without the recall and without
    what the recall's work (the embedder streams ~30 MB of weights per query) does to the caches."""
    from bridge.facade import MemoryBridge

    real = MemoryBridge.execute
    kept: dict[Any, Any] = {}

    async def execute(self: Any, identity: Any, op: Any) -> Any:
        key = (identity.fingerprint, op)
        try:
            hash(key)
        except TypeError:  # an operation with a list field: run it
            return await real(self, identity, op)
        if key not in kept:
            kept[key] = await real(self, identity, op)
        return kept[key]

    MemoryBridge.execute = execute  # type: ignore[method-assign]


def _serve_child(port: int, profile_out: str | None, account: Path | None = None, stub: bool = False) -> int:
    """The server process: one worker, the options `bridge.doors.http.server.serve` passes."""
    global _PROFILER
    if stub:
        _stub_recalls()
    import uvicorn

    from bridge.doors.connection import uvicorn_options
    from bridge.doors.edge import LOG_CONFIG

    config = uvicorn.Config(
        _profiled_app if profile_out else "bridge.doors.http.app:create_app", factory=True, host="127.0.0.1", port=port,
        log_config=LOG_CONFIG, access_log=False, server_header=False, limit_concurrency=None, proxy_headers=False, **uvicorn_options(),
    )
    server = uvicorn.Server(config)
    # CPU time, not wall time: on a loaded machine a wall-clock profile charges whatever ran
    # while this process waited (a loopback send that wakes the load generator, above all)
    _PROFILER = cProfile.Profile(time.thread_time) if profile_out else None

    def stop(signum: int, frame: Any) -> None:  # uvicorn re-raises the SIGTERM it caught once it has shut down
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    write_account = _account_execute(account) if account else None
    try:
        server.run()
    finally:
        if write_account is not None:
            write_account()
        if _PROFILER is not None:
            _PROFILER.disable()
            _PROFILER.dump_stats(profile_out)
    return 0


def _start(home: Path, profile_out: Path | None, account: Path | None = None, server_code: Path | None = None, stub: bool = False) -> tuple[subprocess.Popen, str]:
    port = _service_load().free_port()
    cmd = [sys.executable, __file__, "--serve-child", str(port)] + (["--profile-out", str(profile_out)] if profile_out else []) + (["--account", str(account)] if account else []) + (["--stub-recall"] if stub else [])
    process = subprocess.Popen(cmd, env=_env(home, server_code), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, _service_load().wait_ready(process, f"http://127.0.0.1:{port}", attempts=1200)


async def _in_process_cpu(home: Path, keys: list[str], requests: int, queries: list[str]) -> float:
    bridge, store, ids = await _service_load().open_warm_bridge(home, keys)
    rng = random.Random(0)
    cpu = time.process_time()
    for _ in range(requests):
        await bridge.recall(rng.choice(ids), rng.choice(queries))
    cpu = time.process_time() - cpu
    await bridge.aclose()
    store.close()
    return cpu / requests


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=1000)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--requests", type=int, default=600, help="requests per pass")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument("--profile-out", type=Path, help="also run a cProfile'd pass and write its stats here")
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--home", type=Path, help="reuse a store seeded by an earlier run (kept)")
    p.add_argument("--out", type=Path)
    p.add_argument("--client", choices=("raw", "httpx"), default="raw",
                   help="the generator's HTTP client (raw: service_load.py's minimal keep-alive client, so the generator takes less of the cores the server shares)")
    p.add_argument("--server-code", type=Path, help="serve the packages of this checkout (e.g. an older commit's `git archive`) instead of this one's")
    p.add_argument("--stub-recall", action="store_true", help="answer each (identity, query) after its first recall with that result: the door's CPU alone")
    p.add_argument("--skip-in-process", action="store_true", help="leave out the in-process pass (when only old vs new servers are compared)")
    p.add_argument("--serve-child", type=int, help=argparse.SUPPRESS)
    p.add_argument("--account", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_child:
        return _serve_child(args.serve_child, str(args.profile_out) if args.profile_out else None, args.account, args.stub_recall)

    load = _service_load()
    home = args.home or Path(tempfile.mkdtemp(prefix="vb-service-profile-"))
    keys_file = home / "keys.json"
    if not keys_file.exists():
        keys = asyncio.run(load._seed(home, args.memories, args.users))
        keys_file.write_text(json.dumps(keys))
    keys = json.loads(keys_file.read_text())
    report: dict[str, Any] = {"load_average_start": list(os.getloadavg()), "home": str(home)}
    report["server_code"] = str(args.server_code or Path(__file__).resolve().parent.parent)
    report["in_process_cpu_ms"] = float("nan") if args.skip_in_process else 1000 * asyncio.run(_in_process_cpu(home, keys, args.requests, load.QUERIES))
    for label, concurrency in (("sequential", 1), ("concurrent", args.concurrency)):
        account = home / f"account-{label}.json"
        process, url = _start(home, None, account, args.server_code, args.stub_recall)  # one server per pass: its execute accounting covers exactly this pass
        try:
            row = load._measured_pass(process, url, keys_file, args.requests, concurrency, args.max_seconds, args.client)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
        totals = json.loads(account.read_text())
        row["server_cpu_ms_per_request"] = 1000 * row["server_cpu_s"] / row["requests"] if row["requests"] else float("nan")
        # the door: server CPU over the pass (incl. the generator's few warm-up requests) less the
        # CPU inside MemoryBridge.execute, per request the server handled
        row["execute_cpu_ms_per_call"] = 1000 * totals["execute_cpu_s"] / max(1, totals["calls"])
        row["audit_flush_cpu_ms_per_request"] = 1000 * totals["audit_flush_cpu_s"] / max(1, totals["calls"])
        row["door_cpu_ms_per_request"] = 1000 * (row["server_cpu_s"] - totals["execute_cpu_s"] - totals["audit_flush_cpu_s"]) / max(1, totals["calls"])
        row["gc_cpu_ms_per_request"] = 1000 * totals["gc_cpu_s"] / max(1, totals["calls"])
        row["gc_passes"] = totals["gc_passes"]
        row["gc_longest_ms"] = [round(1000 * s, 2) for s in totals["gc_longest_s"]]
        row["gc_full_passes_ms"] = totals.get("gc_full_passes_ms", [])  # in order, from the server's start (a start-up collection included)
        report[label] = row
    if args.profile_out:
        args.profile_out.parent.mkdir(parents=True, exist_ok=True)
        process, url = _start(home, args.profile_out.resolve(), None, args.server_code, args.stub_recall)
        try:
            load._run_generator(url, keys_file, args.requests, 1, args.max_seconds, args.client)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    report["load_average_end"] = list(os.getloadavg())
    base = report["in_process_cpu_ms"]
    print(f"load average at start {report['load_average_start']}, at end {report['load_average_end']}")
    report["stub_recall"] = args.stub_recall
    print(f"server code: {report['server_code']}; generator client: {args.client}" + ("; recalls stubbed (the door alone)" if args.stub_recall else ""))
    print(f"in-process CPU per recall: {base:.3f} ms")
    for label in ("sequential", "concurrent"):
        row = report[label]
        print(f"service 1 worker {label:<11} x{row['concurrency']}: {row['requests']} requests, server CPU {row['server_cpu_ms_per_request']:.3f} ms/request "
              f"(+{row['server_cpu_ms_per_request'] - base:.3f} over in-process): inside MemoryBridge.execute {row['execute_cpu_ms_per_call']:.3f} ms, "
              f"audit group commit {row['audit_flush_cpu_ms_per_request']:.3f} ms, the rest (the door) {row['door_cpu_ms_per_request']:.3f} ms; wall p50 {row['p50_ms']:.2f} ms p99 {row['p99_ms']:.2f} ms, "
              f"generator CPU {row['generator_cpu_s']:.2f} s, errors {row['errors']}")
        print(f"  of that CPU, the garbage collector's: {row['gc_cpu_ms_per_request']:.3f} ms/request (passes by generation: {row['gc_passes']}, the longest of each {row['gc_longest_ms']} ms; full passes in order from the start {row['gc_full_passes_ms']} ms)")
    if args.profile_out:
        stats = pstats.Stats(str(args.profile_out))
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
