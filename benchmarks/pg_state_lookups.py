"""The lookups every request makes on the PostgreSQL state, as the code makes them against the
same statement run inside a transaction (`PgPool.run` / `run_sync`: BEGIN, the query, COMMIT),
in the same run:

- the recall's sharing read: `shares.for_reader` (one read of both statements) against
  `shares.shared_with` + `teams.teams_of` each in a transaction;
- the session binding (`PgSessionRepository.get`) and the API key (`PgApiKeyRepository.lookup`)
  against the same SELECT in a `run_sync` transaction.

    python benchmarks/pg_state_lookups.py --url postgresql://ROLE@host/db [--calls 500]

The role of URL creates a fresh schema for the run (dropped after); a throw-away server for it:
`python -m contract_tests.postgres_server` prints its admin URL. Prints, per lookup and path,
p50 of wall time and of the calling thread's CPU, and the
whole process's CPU per call (the pool's loop thread and the read workers do the driver's work);
the paths alternate in rounds. The server's own CPU is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from adapters.scopes import ScopeKey  # noqa: E402
from identity.state.protocols import SessionBinding  # noqa: E402

ROUNDS = 10


def _in_transaction(pool: Any, text: str, params: tuple) -> Callable[[], Any]:
    """The same SELECT as one `run_sync` transaction (how the lookups ran before they were reads)."""
    async def run(conn: Any) -> Any:
        return await (await conn.execute(text, params)).fetchall()

    return lambda: pool.run_sync(run, "benchmark")


async def measure(url: str, schema: str, calls: int) -> dict[str, dict[str, float]]:
    from bridge.state.postgres import PostgresState
    from bridge.state.postgres.sharing import _SHARED_WITH, _TEAMS_OF
    from bridge.state.common import ANY_USER
    from bridge.vocabulary import EVERY_AGENT

    state = PostgresState(url, schema=schema, pool_size=4)
    for n in range(20):
        await state.shares.set_audience(ScopeKey.agent("acme", "wukong", f"u{n}"), f"m{n}", frozenset({"bajie"}), 1.0)
    await state.teams.set_members("acme", "red", frozenset({"bajie", "wukong"}))
    sessions, keys = state.session_repository(), state.api_key_repository()
    sessions.bind_if_absent(SessionBinding("acme", "s1", "fingerprint", "u3", "bajie", None, time.time()))
    pool = state.pool

    async def sharing_two_transactions() -> None:
        async def shares(conn: Any) -> None:
            await (await conn.execute(_SHARED_WITH, ("acme", "u3", ANY_USER, "bajie", EVERY_AGENT))).fetchall()

        async def teams(conn: Any) -> None:
            await (await conn.execute(_TEAMS_OF, ("acme", "bajie"))).fetchall()

        await pool.run(shares, "benchmark")
        await pool.run(teams, "benchmark")

    async def sync(fn: Callable[[], Any]) -> None:
        fn()

    paths: dict[str, Callable[[], Awaitable[Any]]] = {
        "sharing: for_reader (one read)": lambda: state.shares.for_reader("acme", "u3", "bajie"),
        "sharing: two transactions": sharing_two_transactions,
        "session: get (one read)": lambda: sync(lambda: sessions.get("acme", "s1")),
        "session: in a transaction": lambda: sync(_in_transaction(pool, sessions._GET, ("acme", "s1"))),
        "API key: lookup (one read)": lambda: sync(lambda: keys.lookup("no-such-key")),
        "API key: in a transaction": lambda: sync(_in_transaction(pool, "SELECT scheme, salt, digest FROM api_keys WHERE key_id = %s", ("no-such-key",))),
    }
    for path in paths.values():  # warm the connections and the prepared statements
        for _ in range(20):
            await path()
    samples: dict[str, tuple[list[int], list[int], list[int]]] = {name: ([], [], []) for name in paths}
    per_round = max(1, calls // ROUNDS)
    for _ in range(ROUNDS):
        for name, path in paths.items():
            wall, cpu, proc = samples[name]
            for _ in range(per_round):
                w, c, p = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
                await path()
                wall.append(time.perf_counter_ns() - w)
                cpu.append(time.thread_time_ns() - c)
                proc.append(time.process_time_ns() - p)
    state.close()
    return {name: {"wall_p50_us": statistics.median(w) / 1e3, "caller_cpu_p50_us": statistics.median(c) / 1e3,
                   "process_cpu_us": statistics.fmean(p) / 1e3} for name, (w, c, p) in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="postgresql://ROLE@host/db (the role creates the schema)")
    parser.add_argument("--calls", type=int, default=500, help="calls per path")
    args = parser.parse_args()
    schema = f"lookups_bench_{uuid.uuid4().hex[:8]}"
    load = os.getloadavg()
    try:
        results = asyncio.run(measure(args.url, schema, args.calls))
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(f"{'lookup':34s} {'wall p50 us':>12s} {'caller CPU p50':>15s} {'process CPU':>12s}   (load {load[0]:.2f} -> {os.getloadavg()[0]:.2f})")
    for name, r in results.items():
        print(f"{name:34s} {r['wall_p50_us']:12.0f} {r['caller_cpu_p50_us']:15.0f} {r['process_cpu_us']:12.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
