#!/usr/bin/env python
"""Rule extractor speed on adversarial and ordinary text, before and after issue 9 finding 4.

    python benchmarks/extract_speed.py [--messages 100] [--chars 8000] [--rounds 5]
                                       [--baseline-ref 19449a0] [--out bench-results/extract.json]

For each workload, `--messages` user messages of `--chars` characters each go through
`RuleExtractor().extract` of this checkout ("after") and of the extractor at `--baseline-ref`
("before": its `bridge/capture/extract.py`, read with `git show` and loaded in this same process under
another module name), next to a linear floor over the same text (`len(text.split())`). Reported:
best-of-rounds seconds (process CPU time, so a shared machine's other load counts less) and the
ratios before/after and after/floor. The baseline gets one round by default on workloads where
it is slow (`--baseline-rounds`), since one round of the pre-fix procedure attack takes seconds.

Workloads: the pre-fix attack (a procedure head with no tail, "to test " repeated), the worst
near-miss of the other rules, English prose, Chinese prose, and prose with a match per sentence.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.capture.extract import RuleExtractor  # noqa: E402
from bridge.results import Message  # noqa: E402

WORKLOADS: dict[str, str] = {
    "procedure head, no tail (the issue's attack)": "to test ",
    "procedure head, near-miss tail": "to deploy us ",
    "preference near miss": "i really prefe ",
    "profile gap near miss": "我在" + "x" * 13,
    "run of spaces": " ",
    "english prose, no match": "the quick brown fox jumps over the lazy dog ",
    "chinese prose, no match": "今天天气很好我们去公园散步吧",
    "a match in every sentence": "I prefer tea. To build it, run make. ",
}


def load_baseline(ref: str) -> Any:
    """The extractor module as it was at `ref`, loaded beside the current one."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:bridge/capture/extract.py"], capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("extract_baseline")
    sys.modules[module.__name__] = module  # dataclasses look their module up while decorating
    exec(compile(source, f"{ref}:bridge/capture/extract.py", "exec"), module.__dict__)
    return module


def best_of(rounds: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def messages_for(unit: str, count: int, chars: int) -> list[Message]:
    text = unit * max(1, chars // len(unit))
    return [Message(role="user", content=text, message_id=f"m{i}") for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--chars", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-rounds", type=int, default=1)
    parser.add_argument("--baseline-ref", default="19449a0", help="a commit whose extract.py predates the fix")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    args = parser.parse_args(argv)

    before, after = load_baseline(args.baseline_ref).RuleExtractor(), RuleExtractor()
    rows = []
    for name, unit in WORKLOADS.items():
        batch = messages_for(unit, args.messages, args.chars)
        floor = best_of(args.rounds, lambda: [len(m.content.split()) for m in batch])
        new = best_of(args.rounds, lambda: after.extract(batch))
        old = best_of(args.baseline_rounds, lambda: before.extract(batch))
        same = [(c.kind, c.content) for c in before.extract(batch[:1])] == [(c.kind, c.content) for c in after.extract(batch[:1])]
        rows.append({"workload": name, "before_s": old, "after_s": new, "floor_s": floor,
                     "before_over_after": old / new, "after_over_floor": new / floor, "same_candidates": same})
        print(f"{name:46s} before {old:8.3f}s  after {new:7.3f}s  x{old / new:7.1f} faster  "
              f"after/floor {new / floor:6.1f}  same output: {same}", flush=True)

    report = {"messages": args.messages, "chars": args.chars, "baseline_ref": args.baseline_ref,
              "python": platform.python_version(), "cpus": os.cpu_count(), "rows": rows}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
