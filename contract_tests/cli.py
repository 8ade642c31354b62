"""`viking-bridge contract --adapter NAME [--examples N] [-k EXPR] [-p PLUGIN]`: run the leakage
contract against one adapter (or a live deployment, configured through that adapter's own
environment variables; every factory writes into a throw-away namespace it removes) and print a
pass/fail report per guarantee.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

import pytest

__all__ = ["main"]


@dataclass
class _Report:
    rows: dict[str, tuple[str, str]] = field(default_factory=dict)  # nodeid -> (outcome, reason)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or report.outcome != "passed":
            if report.skipped:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                self.rows[report.nodeid] = ("SKIP", reason.removeprefix("Skipped: "))
            elif report.failed:
                text = str(report.longrepr)
                first = next((line.strip() for line in text.splitlines() if "GUARANTEE BROKEN" in line), None)
                self.rows[report.nodeid] = ("FAIL", first or text.strip().splitlines()[-1][:300])
            elif report.when == "call":
                self.rows.setdefault(report.nodeid, ("PASS", ""))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="viking-bridge contract", description=__doc__.split("\n\n")[0])
    p.add_argument("--adapter", action="append", required=True, help="registered adapter name (repeatable)")
    p.add_argument("--examples", type=int, default=None, help="property-based worlds per adapter (default 25)")
    p.add_argument("--seed", type=int, default=None, help="replay one property-test world")
    p.add_argument("-k", dest="keyword", default=None, help="only tests matching this pytest -k expression")
    p.add_argument("-p", dest="plugins", action="append", default=[], help="import this module first (it registers your adapter)")
    p.add_argument("-v", "--verbose", action="store_true", help="show pytest's own output too")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    # The suite's plugin is opt-in (no pytest11 entry point), so load it explicitly.
    pytest_args = ["--pyargs", "contract_tests", "-p", "contract_tests.plugin", "-p", "no:cacheprovider", "-q" if args.verbose else "-qq", "--tb=short" if args.verbose else "--tb=no"]
    if not args.verbose:
        pytest_args += ["--no-header", "-rN"]
    for name in args.adapter:
        pytest_args += ["--adapter", name]
    for plugin in args.plugins:
        pytest_args += ["-p", plugin]
    if args.examples is not None:
        pytest_args += ["--contract-examples", str(args.examples)]
    if args.seed is not None:
        pytest_args += ["--contract-seed", str(args.seed)]
    if args.keyword:
        pytest_args += ["-k", args.keyword]
    report = _Report()
    code = pytest.main(pytest_args, plugins=[report])
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    print(f"\nviking-bridge leakage contract — adapter(s): {', '.join(args.adapter)}")
    for nodeid, (outcome, reason) in sorted(report.rows.items()):
        counts[outcome] += 1
        name = nodeid.split("::", 1)[-1]
        print(f"  {outcome:4}  {name}" + (f"\n        {reason}" if reason else ""))
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    if not report.rows:
        print("no tests ran (unknown adapter or -k matched nothing?)")
        return int(code) or 4
    return 1 if counts["FAIL"] else int(code) if int(code) not in (0, 5) else 0
