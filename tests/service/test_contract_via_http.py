"""The leakage contract suite passes through the memory service (`--via http`), not only in-process.

Runs the whole suite in a child pytest for the local store, the Viking simulator and PostgreSQL,
every test's calls going through the service's HTTP stack (contract_tests/http_transport.py), and
for a real OpenViking 0.5.2 server in both auth modes (api_key, trusted) seed 003's seven tests plus
the multi-agent and sharing files. The whole suite on OpenViking through HTTP took 8 and 6 minutes
(api_key, trusted) on a quiet 2-core machine, most of it the server's own per-test work that the
in-process contract run pays already, so it is opt-in: VIKING_BRIDGE_SERVICE_WHOLE_SUITE=1. The
OpenViking runs are skipped, with the reason, where that server cannot be installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPENVIKING_MODES = {"openviking": "api_key", "openviking-trusted": "trusted"}
OPENVIKING_DEFAULT_FILES = ("contract_tests/test_seed_leakage.py", "contract_tests/test_multiagent.py", "contract_tests/test_sharing.py")


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["local", "viking", "postgres", "openviking", "openviking-trusted"])
def test_contract_suite_passes_via_http(adapter: str, tmp_path: Path) -> None:
    if adapter in OPENVIKING_MODES:
        from contract_tests.backends.openviking import _unavailable

        reason = _unavailable(OPENVIKING_MODES[adapter])
        if reason:
            pytest.skip(f"OpenViking ({OPENVIKING_MODES[adapter]}) unavailable: {reason}")
    whole = adapter not in OPENVIKING_MODES or os.environ.get("VIKING_BRIDGE_SERVICE_WHOLE_SUITE") == "1"
    targets = ["contract_tests"] if whole else list(OPENVIKING_DEFAULT_FILES)
    env = {**os.environ, "VIKING_BRIDGE_CONTRACT_EXAMPLES": os.environ.get("VIKING_BRIDGE_CONTRACT_EXAMPLES", "10")}
    if adapter in OPENVIKING_MODES:
        from contract_tests.backends.openviking import hand_down

        env.update(hand_down(OPENVIKING_MODES[adapter]))  # the child uses this run's server, not a new one
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets, "--adapter", adapter, "--via", "http", "--basetemp", str(tmp_path / "t")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
