"""The mutation tool itself, smoke-tested (its full run is on demand, never in the default suite):
it finds the mutants of a policy module, every entry of its equivalent list still names one, and
a known mutant — the key rule's `raise` dropped — is killed by the key rule tests, run the way
the tool runs them (a forked child, the mutant swapped in, pytest in-process)."""

from __future__ import annotations

import sys
from pathlib import Path

TOOL_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOL_DIR))
try:
    import mutate_policy as tool
finally:
    sys.path.remove(str(TOOL_DIR))


def test_every_equivalent_entry_names_a_mutant_that_exists():
    signatures = {(name, tool.signature(name, what)) for name, module in tool.MODULES.items() for what in tool.count_mutants(module)}
    stale = set(tool.EQUIVALENT) - signatures
    assert not stale, f"equivalent entries naming no mutant (the line or the change is gone): {stale}"


def test_a_known_mutant_is_killed():
    mutants = tool.count_mutants("bridge.policy.keys")
    index = next(k for k, what in enumerate(mutants) if "drop the raise" in what)
    tests = ["tests/bridge/test_policy_keys.py"]
    out = tool.run_many([("bridge.policy.keys", index, tests)], 1, 120.0)
    assert out[("bridge.policy.keys", index)][0] == "killed"
