"""The audit stage of a recall on the PostgreSQL state: one committed row per recall (`append`,
as before the group commit, and with `defer_reads=False`) against the group-committed row
(`append_read`, the default), N recall rows in a row against a PostgreSQL database the role of
URL owns (a fresh schema per run, dropped after).

    python benchmarks/pg_audit_reads.py --url postgresql://... --mode append|append_read [--rows 2000]

Prints per-recall wall and CPU (the caller's thread, and the whole process: the pool's thread
does the driver's work), p50/p99 of one call's wall, and the totals including the last flush.
The server's own CPU is not counted. Run the modes alternately in fresh processes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid

import psycopg

from adapters.scopes import ScopeKey
from identity.model import MemoryIdentity

ALICE = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="coder", session_id="s1")
SCOPE = ScopeKey.private("acme", "alice")


async def measure(url: str, schema: str, mode: str, rows: int) -> dict[str, float]:
    from bridge.state.postgres import PostgresState

    deferred = {"defer_reads": True} if mode == "append_read" else {}  # `append` runs on code from before the queue too
    state = PostgresState(url, schema=schema, pool_size=8, **deferred)
    audit = state.audit
    append = audit.append_read if mode == "append_read" else audit.append
    flush = getattr(audit, "aflush", None)
    ids = [f"mem{n:04d}" for n in range(25)]  # a recall's row: 25 ids, one scope, no grant
    detail = {"purpose": "answer", "searched": [str(SCOPE)], "failed": []}
    for _ in range(100):  # warm the pool's connections and the driver's prepared statements
        await append(ALICE, "recall", memory_ids=ids, scopes=[SCOPE], grant_ids=[None], detail=detail)
    if flush is not None:
        await flush()
    calls = []
    wall0, thread0, proc0 = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
    for _ in range(rows):
        start = time.perf_counter_ns()
        await append(ALICE, "recall", memory_ids=ids, scopes=[SCOPE], grant_ids=[None], detail=detail)
        calls.append(time.perf_counter_ns() - start)
    if flush is not None:
        await flush()  # the rows are all on the server: their cost is in the totals
    wall, thread, proc = time.perf_counter_ns() - wall0, time.thread_time_ns() - thread0, time.process_time_ns() - proc0
    await state.aclose()
    calls.sort()
    return {
        "wall_us": wall / rows / 1e3, "thread_cpu_us": thread / rows / 1e3, "process_cpu_us": proc / rows / 1e3,
        "p50_us": statistics.median(calls) / 1e3, "p99_us": calls[int(len(calls) * 0.99)] / 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="postgresql://ROLE@host/db (the role creates the schema)")
    parser.add_argument("--mode", choices=("append", "append_read"), required=True)
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    schema = f"audit_bench_{uuid.uuid4().hex[:8]}"
    try:
        got = asyncio.run(measure(args.url, schema, args.mode, args.rows))
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    load = os.getloadavg()[0]
    print(f"{args.mode:12s} rows={args.rows} " + " ".join(f"{k}={v:.1f}" for k, v in got.items()) + f" load={load:.2f}")


if __name__ == "__main__":
    main()
