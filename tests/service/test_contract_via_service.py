"""The leakage contract suite through a REAL `viking-bridge serve` process configured by
environment alone (`--via service`, contract_tests/service_transport.py), in front of the Viking
simulator (served over HTTP by its own process) and a real OpenViking 0.5.2 server in api_key
and trusted modes.

Each contract test gets its own serve process over a fresh state database and backend namespace
(the module docstring of the transport says why a reset under one long-lived process would test
the reset, not the bridge); the simulator, OpenViking and PostgreSQL are started once per child
session. That costs serve's start-up per test, so the default run is seed 003's seven leakage
tests on every backend, plus the multi-agent and sharing files on Viking (the same files run
through the in-process HTTP stack on OpenViking, tests/service/test_contract_via_http.py); the
whole suite runs the same way when VIKING_BRIDGE_SERVICE_WHOLE_SUITE=1 (opt-in: about 50
processes per backend). Every test's responses, /metrics, access log and stderr are searched for the backend
secrets by the transport itself, so a leak fails the test that caused it.

Measured for viking (2 shared cores, load ~14 from parallel work, so slower than CI): seed 1-7 in
184 s with a median serve start-up of 15.5 s; multi-agent + sharing (12 tests) in 459 s, median
start-up 26.5 s. serve's start-up is ~2.5 s of CPU, so a quiet machine pays about that per test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = {"viking": None, "openviking": "api_key", "openviking-trusted": "trusted"}
DEFAULT_FILES = ("contract_tests/test_seed_leakage.py", "contract_tests/test_multiagent.py", "contract_tests/test_sharing.py")


@pytest.mark.slow
@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_contract_suite_passes_through_a_serve_process_configured_by_environment(adapter: str, tmp_path: Path) -> None:
    from contract_tests.service_transport import unavailable_reason

    reason = unavailable_reason(adapter)
    if reason:
        pytest.skip(f"{adapter} cannot run behind serve here: {reason}")
    whole = os.environ.get("VIKING_BRIDGE_SERVICE_WHOLE_SUITE") == "1"
    targets = ["contract_tests"] if whole else list(DEFAULT_FILES if adapter == "viking" else DEFAULT_FILES[:1])
    env = {**os.environ, "VIKING_BRIDGE_CONTRACT_EXAMPLES": os.environ.get("VIKING_BRIDGE_CONTRACT_EXAMPLES", "3")}
    if ADAPTERS[adapter] is not None:
        from contract_tests.backends.openviking import hand_down

        env.update(hand_down(ADAPTERS[adapter]))  # the child's serve processes use this run's server
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *targets, "--adapter", adapter, "--via", "service", "--basetemp", str(tmp_path / "t")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=5400 if whole else 1800,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
    assert "serve start-up" in run.stdout, run.stdout[-2000:]  # the tests really went through serve processes
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED") and "test_seed_leakage.py" in line]
    assert not skipped, skipped  # the seven seed tests never skip: each one ran through a process
