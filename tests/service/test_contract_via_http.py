"""The leakage contract suite passes through the memory service (`--via http`), not only in-process.

Runs the whole suite in a child pytest for the local store and PostgreSQL, every test's calls
going through the service's HTTP stack in the test's own process (contract_tests/http_transport.py).
The Viking simulator and OpenViking are not run here: tests/service/test_contract_via_service.py
drives the same suite through a real `viking-bridge serve` process in front of them, which goes
through this very HTTP stack and more (configuration by environment alone, a real socket, the
secrets searched in every response), so an in-process HTTP run of those backends would only repeat
it at the price of another OpenViking server start per mode. Measured before they were dropped
(2 cores, load ~4.5): viking's whole suite here took 29 s, OpenViking's seed + multi-agent +
sharing files 108 s per mode, server start included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["local", "postgres"])
def test_contract_suite_passes_via_http(adapter: str, tmp_path: Path) -> None:
    env = {**os.environ, "VIKING_BRIDGE_CONTRACT_EXAMPLES": os.environ.get("VIKING_BRIDGE_CONTRACT_EXAMPLES", "10")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "contract_tests", "--adapter", adapter, "--via", "http", "--basetemp", str(tmp_path / "t")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
