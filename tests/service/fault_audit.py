"""Exactly-once under faults, measured: writers hammer real `viking-bridge serve` processes that are
SIGKILLed and restarted round after round; afterwards every acknowledged write must be stored
exactly once and every stored memory audited exactly once (`write` or `recovered`).

    python -m tests.service.fault_audit --backend local --rounds 25 --writers 4
    python -m tests.service.fault_audit --backend postgres --rounds 25 --writers 4   # two replicas on one database
    python -m tests.service.fault_audit --backend postgres --rounds 25 --pg-outages 8  # ... and PostgreSQL outages

Writers behave as a careful client does: a write that got no answer (the process died under it,
or it answered 503) is retried with the same idempotency key until it is acknowledged, so a write
in flight at the kill is exercised three ways at once: the backend may have committed it, its
intent is open, and the retry arrives at the restarted process. `local`: one serve (local store,
SQLite state) killed every round. `postgres`: two replicas on one PostgreSQL (memories and state);
each round kills one of them (alternately) while both take writes, the survivor keeps serving;
with `--pg-outages N`, N of the rounds stop the PostgreSQL server itself instead (a fast shutdown
that cuts every connection, for 0.5-3 s, data kept) while both replicas go on taking writes. The
outages need a server this run may stop: a second, independent one it starts for itself.

Prints one JSON line: acknowledged, stored, lost (acknowledged but absent), duplicated (a
content stored twice), audited_not_once (stored memories with zero or several audit rows), and
the seconds it took. Exit 1 if any of the three counts is non-zero. `test_fault_audit.py`
runs a short version in the default suite; this is the full-size run (minutes). It lives with the
tests, not under benchmarks/, because it drives the test kits' real servers (benchmarks measure
library code only).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

INTENT_GRACE_S = 1.0
#: a process start on a loaded host (imports, migrations checked, open checks) can take a minute
READY_S = 240.0


@dataclass
class Writer:
    user: str
    key: str
    urls: Callable[[], list[str]]
    acked: dict[str, str] = field(default_factory=dict)  # idempotency key -> memory id
    retries: int = 0

    def run(self, stop: threading.Event, finish: threading.Event) -> None:
        n, pending = 0, False  # pending: the current key was sent and is not acknowledged yet
        client = httpx.Client(timeout=30.0, headers={"X-API-Key": self.key})
        try:
            while not finish.is_set():
                if stop.is_set() and not pending:
                    return  # between writes: nothing in doubt
                key = f"{self.user}-{n}"
                urls = self.urls()
                url = urls[n % len(urls)] if urls else None
                if url is None:
                    time.sleep(0.05)
                    continue
                pending = True
                try:
                    r = client.post(url + "/api/v1/memories", json={"content": f"{self.user} note {n}", "kind": "note", "idempotency_key": key})
                except httpx.HTTPError:
                    self.retries += 1
                    time.sleep(0.05)
                    continue  # no answer: the same key again
                if r.status_code in (200, 201):
                    self.acked[key] = r.json()["memory_id"]
                    n, pending = n + 1, False
                elif r.status_code in (502, 503, 504):
                    self.retries += 1
                    time.sleep(0.05)
                else:
                    raise RuntimeError(f"{key}: {r.status_code} {r.text[:300]}")
        finally:
            client.close()


def _walk(client: httpx.Client, path: str, params: dict[str, Any], items: str, cursor_param: str, next_of: Callable[[Any], Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    for _ in range(100_000):
        r = client.get(path, params={**params, **extra})
        r.raise_for_status()
        body = r.json()
        page = body[items] if items else body
        out += page
        nxt = next_of(body)
        if not nxt:
            return out
        extra = {cursor_param: nxt}
    raise RuntimeError("did not reach the end")


def verify(url: str, admin_key: str, writers: list[Writer]) -> dict[str, int]:
    with httpx.Client(base_url=url, timeout=60.0) as admin:
        admin.headers["X-API-Key"] = admin_key
        rows = _walk(admin, "/api/v1/audit", {"limit": 1000}, "", "before_seq", lambda page: min((r["seq"] for r in page), default=None) if len(page) == 1000 else None)
    audited = collections.Counter(mid for r in rows if r["action"] in ("write", "recovered") for mid in r["memory_ids"])
    acked = stored_n = lost = duplicated = 0
    not_once = 0
    for w in writers:
        with httpx.Client(base_url=url, timeout=60.0, headers={"X-API-Key": w.key}) as c:
            stored = _walk(c, "/api/v1/memories", {"scope": f"acme/user/{w.user}", "limit": 500}, "memories", "cursor", lambda body: body["next_cursor"])
        contents = collections.Counter(m["content"] for m in stored)
        ids = {m["memory_id"] for m in stored}
        acked += len(w.acked)
        stored_n += len(stored)
        lost += len(set(w.acked.values()) - ids)
        duplicated += sum(n - 1 for n in contents.values() if n > 1)
        not_once += sum(1 for mid in ids if audited[mid] != 1)
    return {"acknowledged": acked, "stored": stored_n, "lost": lost, "duplicated": duplicated, "audited_not_once": not_once,
            "retries": sum(w.retries for w in writers)}


def run_local(rounds: int, n_writers: int, seed: int, tmp: Path, up: tuple[float, float] = (0.3, 1.5)) -> dict[str, Any]:
    from tests.service.servicekit import spawn_service

    env = {"VIKING_BRIDGE_STATE_INTENT_GRACE_S": str(INTENT_GRACE_S)}
    service = spawn_service(tmp, env=env)
    current: list[str] = [service.url]
    writers = [Writer(f"w{i}", service.api_key(f"w{i}"), lambda: list(current)) for i in range(n_writers)]
    admin = service.api_key("root", roles=["admin"])
    rng = random.Random(seed)
    stop, finish = threading.Event(), threading.Event()
    threads = [threading.Thread(target=w.run, args=(stop, finish), daemon=True) for w in writers]
    for t in threads:
        t.start()
    try:
        for _ in range(rounds):
            time.sleep(rng.uniform(*up))  # the process serves this long, then dies
            os.kill(service.process.pid, signal.SIGKILL)
            service.process.wait(10)
            current.clear()
            time.sleep(INTENT_GRACE_S + 0.2)  # restart as a supervisor does, after the intents' grace
            service.keys.close()
            service = spawn_service(tmp, env=env, ready_timeout=READY_S)
            current.append(service.url)
        stop.set()
        for t in threads:
            t.join(120)
        finish.set()
        return verify(service.url, admin, writers)
    finally:
        finish.set()
        service.stop()


def run_postgres(rounds: int, n_writers: int, seed: int, tmp: Path, up: tuple[float, float] = (0.3, 1.5), outages: int = 0) -> dict[str, Any]:
    import secrets

    from contract_tests.postgres_server import second_server, shared_server
    from identity.providers import ApiKeyStore
    from identity.state.postgres import PgApiKeyRepository
    from identity.storage.postgres import PgPool
    from tests.postgres import test_two_services as kit

    kit.INTENT_GRACE_S = INTENT_GRACE_S
    server = second_server() if outages else shared_server()  # only a server of our own may be stopped
    db = server.create_database()
    secret = secrets.token_hex(32)
    replicas = [kit._spawn(db, secret, tmp, 0, READY_S), kit._spawn(db, secret, tmp, 1, READY_S)]
    live: list[str] = [r.url for r in replicas]
    keys = ApiKeyStore(PgApiKeyRepository(PgPool(db.app_url, max_size=1), owns_pool=True))
    writers = [Writer(f"w{i}", kit._key(keys, f"w{i}"), lambda: list(live)) for i in range(n_writers)]
    admin = kit._key(keys, "root", roles=["admin"])
    rng = random.Random(seed)
    outage_rounds = set(rng.sample(range(rounds), min(outages, rounds)))
    stop, finish = threading.Event(), threading.Event()
    threads = [threading.Thread(target=w.run, args=(stop, finish), daemon=True) for w in writers]
    for t in threads:
        t.start()
    n = 2
    try:
        for round_ in range(rounds):
            time.sleep(rng.uniform(*up))  # the process serves this long, then dies
            if round_ in outage_rounds:  # this round the database goes away under both replicas instead
                server.take_down()
                time.sleep(rng.uniform(0.5, 3.0))
                server.bring_back()
                continue
            victim = round_ % 2
            os.kill(replicas[victim].process.pid, signal.SIGKILL)
            replicas[victim].process.wait(10)
            live[:] = [replicas[1 - victim].url]
            time.sleep(INTENT_GRACE_S + 0.2)
            replicas[victim] = kit._spawn(db, secret, tmp, n, READY_S)
            n += 1
            live[:] = [r.url for r in replicas]
        stop.set()
        for t in threads:
            t.join(120)
        finish.set()
        # the last killed replica's intents are reconciled by the next replica to open
        time.sleep(INTENT_GRACE_S + 0.2)
        last = kit._spawn(db, secret, tmp, n, READY_S)
        try:
            return verify(last.url, admin, writers)
        finally:
            last.process.send_signal(signal.SIGTERM)
            last.process.wait(30)
    finally:
        finish.set()
        keys.close()
        for r in replicas:
            if r.process.poll() is None:
                r.process.send_signal(signal.SIGTERM)
                r.process.wait(30)
        server.drop_database(db)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("local", "postgres"), default="local")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pg-outages", type=int, default=0, help="postgres: rounds that stop the PostgreSQL server instead of a replica")
    parser.add_argument("--up", type=float, nargs=2, default=(0.3, 1.5), metavar=("MIN", "MAX"), help="seconds a process serves before it is killed")
    args = parser.parse_args(argv)
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="vb-fault-")  # kept when the run fails: the processes' logs are in it
    if args.backend == "local":
        if args.pg_outages:
            parser.error("--pg-outages needs --backend postgres")
        result = run_local(args.rounds, args.writers, args.seed, Path(tmp), tuple(args.up))
    else:
        result = run_postgres(args.rounds, args.writers, args.seed, Path(tmp), tuple(args.up), outages=args.pg_outages)
    shutil.rmtree(tmp, ignore_errors=True)
    result.update(backend=args.backend, rounds=args.rounds, writers=args.writers, pg_outages=args.pg_outages, seconds=round(time.monotonic() - started, 1))
    print(json.dumps(result), flush=True)
    return 1 if result["lost"] or result["duplicated"] or result["audited_not_once"] else 0


if __name__ == "__main__":
    sys.exit(main())
