"""`viking-bridge migrate`: copy tenants' memories from one backend to another.

    viking-bridge migrate --from local:~/.local/share/viking-bridge --to postgres:postgresql://... \\
        --tenant acme --tenant globex [--no-global] [--allow-empty] [--report report.json] [--verify-only] [--no-state]
    viking-bridge migrate --state-only --from SPEC --to SPEC --tenant acme --id-map report.json

The tenants' bridge state (grants, teams, quota counters, shares, live manifests, audit history)
moves with the memories when both endpoints keep it beside them (bridge/migrate/state.py), or by
`--state-only` with an earlier run's report for its id map.

Idempotent and resumable: run it again after a kill (or just again) and it writes nothing it
already wrote. A progress bar on a terminal, one line per 5% otherwise; the report (JSON) has
per-scope counts, the verification and the source -> target id map. Exit 0 only when the
verification passed. Every error is one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Sequence, TextIO

from bridge.assembly.backends import REGISTRY
from bridge.errors import VikingBridgeError

__all__ = ["main"]

EXIT_ERROR, EXIT_UNVERIFIED = 2, 1


class LineProgress:
    """Progress for logs and pipes: a line at each 5% step (and the last), with the rate."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.total, self.done, self._step, self._started = out, 0, 0, 0, time.monotonic()

    def start(self, total: int) -> None:
        self.total, self._started = total, time.monotonic()
        print(f"migrate: {total} memories to copy", file=self.out, flush=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        step = self.done * 20 // max(self.total, 1)
        if step > self._step or self.done == self.total:
            self._step = step
            rate = self.done / max(time.monotonic() - self._started, 1e-9)
            print(f"migrate: {self.done}/{self.total} ({100 * self.done // max(self.total, 1)}%, {rate:.0f}/s)", file=self.out, flush=True)


class BarProgress:
    """A rich progress bar on a terminal (rich: a maintained, dependency-free terminal renderer)."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(TextColumn("migrate"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=False)
        self._task = None

    def start(self, total: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("copy", total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:  # before start() there is no bar to advance
            self._bar.advance(self._task, n)

    def stop(self) -> None:
        self._bar.stop()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="viking-bridge migrate", description="Copy memories between backends, resumably, and verify the copy.")
    p.add_argument("--from", dest="source", required=True, help="source backend: " + ", ".join(e.spec_usage for e in REGISTRY.values() if e.spec_usage))
    p.add_argument("--to", dest="target", required=True, help="target backend (same forms)")
    p.add_argument("--tenant", action="append", default=[], required=True, help="a tenant to copy (repeat for several)")
    p.add_argument("--no-global", action="store_true", help="leave the global scope out")
    p.add_argument("--allow-empty", action="store_true", help="accept a named tenant that has no memories in the source (else an error: a mistyped tenant copies nothing)")
    p.add_argument("--verify-only", action="store_true", help="copy nothing; compare the two sides")
    p.add_argument("--report", type=Path, help="write the JSON report here")
    p.add_argument("--operator", default="operator", help="the name the audit rows record for this run")
    p.add_argument("--concurrency", type=int, default=4, help="writes in flight at once (default 4)")
    p.add_argument("--no-state", action="store_true", help="copy the memories only; leave the bridge state where it is")
    p.add_argument("--state-only", action="store_true", help="carry the bridge state only (the memories were copied before): needs --id-map")
    p.add_argument("--id-map", type=Path, help="with --state-only: the report (--report) of the run that copied the memories")
    p.add_argument("--state-batch", type=int, default=500, help="audit rows carried per transaction (default 500)")
    return p


async def _run(args: argparse.Namespace) -> int:
    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    report = await (_state_only(args, say) if args.state_only else _memories(args, say))
    data = report.to_dict()
    if args.report:
        args.report.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    summary = {k: data[k] for k in ("source", "target", "tenants", "ok", "copied", "already_present")}
    state = data["state"] or {}
    carried = {kind: t["carried"] for kind, t in state.get("kinds", {}).items()} if state.get("carried") else state.get("skipped")
    print(json.dumps({**summary, "scopes": len(data["scopes"]), "state": carried, "problems": data["problems"][:10]}, ensure_ascii=False))
    return 0 if report.ok else EXIT_UNVERIFIED


async def _memories(args: argparse.Namespace, say):  # type: ignore[no-untyped-def]
    from bridge.migrate.copy import CopyReport, scopes_of
    from bridge.migrate.endpoints import open_endpoint, open_target
    from bridge.migrate.run import MigrationReport, migrate
    from bridge.migrate.verify import verify

    progress = BarProgress() if sys.stderr.isatty() else LineProgress(sys.stderr)
    async with open_endpoint(args.source, source=True) as source, open_target(args.target, source) as target:
        if args.verify_only:
            checked = await verify(source.backend, target.backend, await scopes_of(source.backend, args.tenant, not args.no_global, allow_empty=args.allow_empty))
            return MigrationReport(source.spec, target.spec, tuple(args.tenant), CopyReport(), checked)
        try:
            return await migrate(source, target, args.tenant, include_global=not args.no_global, progress=progress,
                                 operator=args.operator, concurrency=args.concurrency, allow_empty=args.allow_empty,
                                 carry=not args.no_state, batch=args.state_batch, say=say)
        finally:
            if isinstance(progress, BarProgress):
                progress.stop()


async def _state_only(args: argparse.Namespace, say):  # type: ignore[no-untyped-def]
    """`--state-only`: both endpoints opened as they are (nothing is created), the id map read
    from the report of the run that copied the memories."""
    from bridge.errors import ConfigurationError
    from bridge.migrate.endpoints import open_endpoint
    from bridge.migrate.run import migrate_state

    if args.id_map is None:
        raise ConfigurationError("--state-only needs --id-map REPORT.json (the report of the run that copied the memories)")
    try:
        id_map = json.loads(args.id_map.read_text())["id_map"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"--id-map {args.id_map}: not a migrate report with an id_map ({type(exc).__name__})") from None
    if not isinstance(id_map, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in id_map.items()):
        raise ConfigurationError(f"--id-map {args.id_map}: its id_map is not a map of memory ids")
    async with open_endpoint(args.source, source=True) as source, open_endpoint(args.target, source=True) as target:
        return await migrate_state(source, target, args.tenant, id_map, batch=args.state_batch, say=say)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return asyncio.run(_run(args))
    except VikingBridgeError as exc:
        print(f"viking-bridge migrate: error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("viking-bridge migrate: interrupted (run it again to resume)", file=sys.stderr)
    return EXIT_ERROR
