"""The memory service under load vs the library in-process (issue 11), in one bounded run.

    .venv/bin/python benchmarks/service_load.py                 # 2,000 memories, ~1-2 minutes
    .venv/bin/python benchmarks/service_load.py --memories 500 --requests 300 --out bench-results/service.json

Phases, same store, same identities, same queries:
1. in-process: `MemoryBridge.recall` in this process — sequential (latency p50/p99) and with
   `--concurrency` tasks (throughput);
2. the service (`viking-bridge serve`) with 1 and with 2 workers, driven by a load generator in
   a SEPARATE process (this file with `--generate`) over loopback with keep-alive connections:
   the same sequential and concurrent passes (API key authentication on every request).
3. interleaved, while the one-worker server runs: the library in this process and the service,
   `--requests` sequential recalls each, in `--rounds` alternating rounds, so both p50s come from
   the same minutes (the phases above are measured one after the other, and on a shared machine
   the same recall's p50 moved from 2.4 to 4.4 ms within a minute: that drift lands on their
   difference).
Reported: p50/p99 per pass, throughput, and the ratios the issue sets goals for — service p50
minus in-process p50 (goal <= 1 ms at low load; from phases 1 and 2, and from phase 3 as
`service_1w_p50_minus_in_process_interleaved_ms`), 2-worker throughput / in-process (goal >= 0.6
on 2 cores), p99 at the concurrent pass (goal < 25 ms). Counts and time are bounded
(`--requests`, `--max-seconds` per pass). The generator shares the machine's cores with the
server: on 2 cores that is part of what the figures measure, so each pass also reports the
generator's own CPU seconds and the server's (all workers, from /proc), and requests per server
CPU-second — the throughput with the generator's share taken out. The load average at start
and end is recorded with the figures.

`--client` (default `both`): the generator's HTTP client. httpx spends about 1-2 ms of CPU per
request of its own on this machine, which in the sequential pass adds to every latency measured
(it runs between a response and the next request) and in the concurrent pass takes a core share
from the server; `raw` is a minimal keep-alive HTTP/1.1 client over asyncio streams (GET with a
Content-Length answer only), so its figures are the service's. With `both`, every service pass is
run with each, and the goals' figures are printed for both (`ratios`, `ratios_raw_client`).
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
from pathlib import Path
from typing import Any

QUERIES = ["deployment runbook", "database migrations", "frontend framework", "api latency", "team decision", "on-call rotation", "editor preference", "release checklist"]
TOPICS = ["deployment", "database", "frontend", "api", "testing", "security", "release", "editor", "monitoring", "design"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summary(latencies: list[float], seconds: float) -> dict[str, float]:
    return {"requests": len(latencies), "p50_ms": percentile(latencies, 0.5) * 1000, "p99_ms": percentile(latencies, 0.99) * 1000,
            "mean_ms": statistics.fmean(latencies) * 1000 if latencies else float("nan"), "throughput_rps": len(latencies) / seconds if seconds else 0.0}


# -- the load generator (a separate process) --------------------------------------------------
def request_head(host: str, port: int, target: str, key: str, headers: dict[str, str] | None = None) -> bytes:
    """A keep-alive GET of `target` with the API key (and any further `headers`)."""
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    return f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nX-API-Key: {key}\r\n{extra}\r\n".encode("latin-1")


def response_head(head: bytes) -> tuple[int, int]:
    """(status, Content-Length) of a response head, its blank line included."""
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return int(head.split(b" ", 2)[1]), length


class _RawConnection:
    """A minimal HTTP/1.1 keep-alive client (GET, Content-Length bodies only): the `raw` client
    measures the service without httpx's own per-request CPU (about 1-2 ms on this machine,
    which in a sequential pass adds to every latency the generator records)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, target: str, key: str, headers: dict[str, str] | None = None) -> int:
        """The answer's status to GET `target` with `key` (and any further `headers`)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(request_head(self.host, self.port, target, key, headers))
        status, length = response_head(await self.reader.readuntil(b"\r\n\r\n"))
        await self.reader.readexactly(length)
        return status

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _generate(url: str, keys: list[str], requests: int, concurrency: int, max_seconds: float, client_kind: str = "httpx") -> dict[str, Any]:
    import httpx
    from urllib.parse import urlencode, urlsplit

    latencies: list[float] = []
    errors = 0
    parts = urlsplit(url)
    raw = [_RawConnection(parts.hostname or "127.0.0.1", parts.port or 80) for _ in range(concurrency)] if client_kind == "raw" else []
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        for key in keys:  # warm every worker path and key
            if raw:
                for connection in raw:
                    await connection.get("/api/v1/recall?" + urlencode({"query": "warm up"}), key)
            else:
                await client.get("/api/v1/recall", params={"query": "warm up"}, headers={"X-API-Key": key})
        deadline = time.perf_counter() + max_seconds
        counter = iter(range(requests))

        async def worker(n: int) -> None:
            nonlocal errors
            rng = random.Random(n)
            for _ in counter:
                if time.perf_counter() > deadline:
                    return
                query, key = rng.choice(QUERIES), rng.choice(keys)
                started = time.perf_counter()
                if raw:
                    status = await raw[n].get("/api/v1/recall?" + urlencode({"query": query}), key)
                else:
                    status = (await client.get("/api/v1/recall", params={"query": query}, headers={"X-API-Key": key})).status_code
                latencies.append(time.perf_counter() - started)
                errors += status != 200

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker(n) for n in range(concurrency)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    for connection in raw:
        connection.close()
    # the generator's own CPU: on 2 cores, what it takes is not there for the server
    return {**summary(latencies, elapsed), "errors": errors, "concurrency": concurrency, "seconds": elapsed, "generator_cpu_s": cpu, "client": client_kind,
            "latencies_s": latencies}


def _tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` and every process below it (the uvicorn workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        n = todo.pop()
        total += times.get(n, 0.0)
        todo += children.get(n, [])
    return total


def _measured_pass(process: subprocess.Popen, url: str, keys_file: Path, requests: int, concurrency: int, max_seconds: float, client: str = "httpx") -> dict[str, Any]:
    """One generator pass, with the server's CPU (all workers) over the same pass."""
    before = _tree_cpu_seconds(process.pid)
    row = _run_generator(url, keys_file, requests, concurrency, max_seconds, client)
    row["server_cpu_s"] = _tree_cpu_seconds(process.pid) - before
    del row["latencies_s"]
    # requests per CPU-second the server spent: throughput with the generator's share taken out
    row["rps_per_server_cpu_s"] = row["requests"] / row["server_cpu_s"] if row["server_cpu_s"] else float("nan")
    return row


def _run_generator(url: str, keys_file: Path, requests: int, concurrency: int, max_seconds: float, client: str = "httpx") -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--generate", url, "--keys-file", str(keys_file), "--requests", str(requests), "--concurrency", str(concurrency),
         "--max-seconds", str(max_seconds), "--client", client],
        capture_output=True, text=True, timeout=max_seconds + 120,
    )
    if out.returncode != 0:
        raise SystemExit(f"load generator failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


# -- set-up and the in-process floor -----------------------------------------------------------
async def _seed(home: Path, memories: int, users: int) -> list[str]:
    from bridge.facade import MemoryBridge
    from identity.providers.api_keys import ApiKey, ApiKeyProvider, ApiKeyStore

    store = ApiKeyStore(home / "keys.sqlite3")
    keys = [store.issue(tenant_id=f"t{n % 2}", user_id=f"u{n}", agent_id="bench", workspace_id=f"ws{n % 4}", department_ids=[f"d{n % 3}"], label="bench").key for n in range(users)]
    provider = ApiKeyProvider(store)
    ids = [await provider.authenticate(ApiKey(k)) for k in keys]
    bridge = MemoryBridge.open_local(home / "data")
    rng = random.Random(7)
    kinds = [("preference", None), ("fact", "workspace"), ("decision", "workspace"), ("procedure", "agent"), ("note", None)]
    for n in range(memories):
        kind, visibility = rng.choice(kinds)
        topic = rng.choice(TOPICS)
        await bridge.remember(rng.choice(ids), f"{topic} memory {n}: notes about the {topic} of project {rng.randint(1, 40)}", kind, visibility=visibility)
    await bridge.aclose()
    store.close()
    return keys


async def open_warm_bridge(home: Path, keys: list[str]) -> tuple[Any, Any, list[Any]]:
    """The library on the benchmark's store, the API key store and each key's identity, every
    identity's first recall done (the model's and the partitions' first loads are not what is
    measured). The caller closes the bridge (`aclose`) and the key store."""
    from bridge.facade import MemoryBridge
    from identity.providers.api_keys import ApiKey, ApiKeyProvider, ApiKeyStore

    store = ApiKeyStore(home / "keys.sqlite3")
    ids = [await ApiKeyProvider(store).authenticate(ApiKey(k)) for k in keys]
    bridge = MemoryBridge.open_local(home / "data")
    for identity in ids:
        await bridge.recall(identity, "warm up")
    return bridge, store, ids


async def _in_process(home: Path, keys: list[str], requests: int, concurrency: int, max_seconds: float) -> dict[str, Any]:
    bridge, store, ids = await open_warm_bridge(home, keys)
    results = {}
    for label, tasks in (("sequential", 1), ("concurrent", concurrency)):
        latencies: list[float] = []
        counter = iter(range(requests))
        deadline = time.perf_counter() + max_seconds

        async def worker(n: int) -> None:
            rng = random.Random(n)
            for _ in counter:
                if time.perf_counter() > deadline:
                    return
                started = time.perf_counter()
                await bridge.recall(rng.choice(ids), rng.choice(QUERIES))
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(tasks)))
        results[label] = {**summary(latencies, time.perf_counter() - started), "concurrency": tasks}
    await bridge.aclose()
    store.close()
    return results


async def _interleaved(home: Path, keys: list[str], url: str, keys_file: Path, requests: int, rounds: int, max_seconds: float) -> dict[str, Any]:
    """The library in this process and the one-worker service, sequential, in alternating rounds of
    `requests // rounds` recalls each (which goes first alternates too), while the server runs:
    both p50s come from the same minutes, so a change in the machine's speed between two phases
    (on a shared machine the same recall moved from 2.4 to 4.4 ms within a minute) lands on both
    alike instead of on their difference. The same identities, queries and raw client as the
    sequential passes."""
    bridge, store, ids = await open_warm_bridge(home, keys)
    rng = random.Random(11)
    per_round = max(1, requests // rounds)
    local: list[float] = []
    served: list[float] = []
    errors = 0  # a failed request is fast: its latency would flatter the service
    for round_ in range(rounds):
        for side in (("local", "served") if round_ % 2 == 0 else ("served", "local")):
            if side == "served":
                row = _run_generator(url, keys_file, per_round, 1, max_seconds, "raw")
                served += row["latencies_s"]
                errors += row["errors"]
                continue
            for _ in range(per_round):
                started = time.perf_counter()
                await bridge.recall(rng.choice(ids), rng.choice(QUERIES))
                local.append(time.perf_counter() - started)
    await bridge.aclose()
    store.close()
    return {"rounds": rounds, "in_process": summary(local, sum(local)), "service_1w": {**summary(served, sum(served)), "errors": errors}}


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(home: Path) -> dict[str, str]:
    """The environment a server of the benchmark's store runs in: this one's without any other
    VIKING_BRIDGE_ setting, the store and key file under `home`, API keys, no rate limit."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}, "VIKING_BRIDGE_HOME": str(home / "data"),
            "VIKING_BRIDGE_PROVIDER": "api_key", "VIKING_BRIDGE_API_KEYS__DB_PATH": str(home / "keys.sqlite3"), "VIKING_BRIDGE_SERVICE_RATE_BURST": "0"}


def _serve(home: Path, workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--port", str(port), "--workers", str(workers)], env=server_env(home),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, wait_ready(process, f"http://127.0.0.1:{port}", attempts=600)


def wait_ready(process: subprocess.Popen, url: str, *, attempts: int) -> str:
    """`url` once its `/ready` answers 200 (polled every 0.1 s); the process stopped and the run
    ended when it never does (service_profile.py starts its servers the same way)."""
    import httpx

    for _ in range(attempts):
        try:
            if httpx.get(url + "/ready", timeout=1).status_code == 200:
                return url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    raise SystemExit("the service did not start")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--memories", type=int, default=2000)
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--requests", type=int, default=600, help="requests per pass")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-seconds", type=float, default=30.0, help="time bound per pass")
    p.add_argument("--rounds", type=int, default=6,
                   help="the interleaved comparison: --requests sequential recalls on each side, in this many alternating rounds")
    p.add_argument("--out", type=Path)
    p.add_argument("--client", choices=("httpx", "raw", "both"), default="both",
                   help="the generator's HTTP client: httpx (as before), raw (a minimal keep-alive HTTP/1.1 client, so the figure is the service's "
                        "and not the client library's), or both (a sequential pass with each; the concurrent passes use raw)")
    p.add_argument("--generate", metavar="URL", help=argparse.SUPPRESS)
    p.add_argument("--keys-file", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.generate:
        keys = json.loads(args.keys_file.read_text())
        print(json.dumps(asyncio.run(_generate(args.generate, keys, args.requests, args.concurrency, args.max_seconds, args.client))))
        return 0

    home = Path(tempfile.mkdtemp(prefix="vb-service-bench-"))
    keys = asyncio.run(_seed(home, args.memories, args.users))
    keys_file = home / "keys.json"
    keys_file.write_text(json.dumps(keys))
    report: dict[str, Any] = {"memories": args.memories, "users": args.users, "cores": os.cpu_count(), "load_average_start": list(os.getloadavg()),
                              "in_process": asyncio.run(_in_process(home, keys, args.requests, args.concurrency, args.max_seconds))}
    for workers in (1, 2):
        process, url = _serve(home, workers)
        try:
            passes: dict[str, Any] = {}
            for client in (("httpx", "raw") if args.client == "both" else (args.client,)):
                suffix = "" if client == "httpx" or args.client == "raw" else "_raw"
                passes["sequential" + suffix] = _measured_pass(process, url, keys_file, args.requests, 1, args.max_seconds, client)
                passes["concurrent" + suffix] = _measured_pass(process, url, keys_file, args.requests, args.concurrency, args.max_seconds, client)
            report[f"service_{workers}w"] = passes
            if workers == 1:
                report["interleaved"] = asyncio.run(_interleaved(home, keys, url, keys_file, args.requests, args.rounds, args.max_seconds))
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    base = report["in_process"]
    if args.client == "both":  # the same figures with the raw client (no httpx CPU in the latency, less of it beside the server)
        w1, w2 = report["service_1w"], report["service_2w"]
        report["ratios_raw_client"] = {
            "service_1w_p50_minus_in_process_ms": w1["sequential_raw"]["p50_ms"] - base["sequential"]["p50_ms"],
            "service_1w_p99_at_concurrency_ms": w1["concurrent_raw"]["p99_ms"],
            "service_2w_p99_at_concurrency_ms": w2["concurrent_raw"]["p99_ms"],
            "service_2w_over_1w_throughput": w2["concurrent_raw"]["throughput_rps"] / w1["concurrent_raw"]["throughput_rps"],
            "generator_cpu_ms_per_request_httpx": 1000 * w1["sequential"]["generator_cpu_s"] / max(1, w1["sequential"]["requests"]),
            "generator_cpu_ms_per_request_raw": 1000 * w1["sequential_raw"]["generator_cpu_s"] / max(1, w1["sequential_raw"]["requests"]),
            "server_cpu_ms_per_request_1w_sequential": 1000 * w1["sequential_raw"]["server_cpu_s"] / max(1, w1["sequential_raw"]["requests"]),
        }
    mixed = report["interleaved"]
    report["ratios"] = {
        "service_1w_p50_minus_in_process_ms": report["service_1w"]["sequential"]["p50_ms"] - base["sequential"]["p50_ms"],
        # the same difference from the interleaved rounds (both sides in the same minutes)
        "service_1w_p50_minus_in_process_interleaved_ms": mixed["service_1w"]["p50_ms"] - mixed["in_process"]["p50_ms"],
        "service_2w_throughput_over_in_process": report["service_2w"]["concurrent"]["throughput_rps"] / base["concurrent"]["throughput_rps"],
        "service_1w_throughput_over_in_process": report["service_1w"]["concurrent"]["throughput_rps"] / base["concurrent"]["throughput_rps"],
        "service_1w_p99_at_concurrency_ms": report["service_1w"]["concurrent"]["p99_ms"],
        "service_2w_p99_at_concurrency_ms": report["service_2w"]["concurrent"]["p99_ms"],
        "service_2w_over_1w_throughput": report["service_2w"]["concurrent"]["throughput_rps"] / report["service_1w"]["concurrent"]["throughput_rps"],
        # the same with the generator's CPU taken out: server CPU the 2 workers could use / what 1 used
        "service_2w_over_1w_server_cpu": report["service_2w"]["concurrent"]["server_cpu_s"] / report["service_2w"]["concurrent"]["seconds"]
        / (report["service_1w"]["concurrent"]["server_cpu_s"] / report["service_1w"]["concurrent"]["seconds"]),
    }
    report["load_average_end"] = list(os.getloadavg())
    print(f"load average at start {report['load_average_start']}, at end {report['load_average_end']}")
    print(f"{'pass':<32}{'p50 ms':>9}{'p99 ms':>9}{'req/s':>9}{'errors':>8}{'srv cpu':>9}{'gen cpu':>9}{'req/cpu-s':>10}")
    for name in ("in_process", "service_1w", "service_2w"):
        for label, row in report[name].items():
            srv, gen = row.get("server_cpu_s", float("nan")), row.get("generator_cpu_s", float("nan"))
            print(f"{name + ' ' + label + ' x' + str(row['concurrency']):<32}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}{row['throughput_rps']:>9.0f}"
                  f"{row.get('errors', 0):>8}{srv:>9.2f}{gen:>9.2f}{row.get('rps_per_server_cpu_s', float('nan')):>10.0f}")
    for side in ("in_process", "service_1w"):
        row = mixed[side]
        print(f"{'interleaved ' + side + ' x1':<32}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}")
    for k, v in report["ratios"].items():
        print(f"{k:<48}{v:>9.2f}")
    for k, v in report.get("ratios_raw_client", {}).items():
        print(f"raw client: {k:<48}{v:>9.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
