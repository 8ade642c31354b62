"""Seed 003's seven leakage tests hold through the MCP server (`--via mcp`), not only in-process.

One child pytest (one session) runs contract_tests/test_seed_leakage.py for the local store, the
Viking simulator (the `viking` adapter: hosted Viking's API simulated, reached through the
adapter's real HTTP client) and PostgreSQL, every recall/remember/forget/inject/write-back going
through the MCP server's tools (contract_tests/mcp_transport.py); another does the same for a
real OpenViking 0.5.2 server in both auth modes (skipped, with the reason, where it cannot be
installed); a third runs the whole suite on the local store (about 7 s). Not the whole suite on
every adapter: that would double the suite's time, and `--via http` runs it already.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ("local", "viking", "postgres")
OPENVIKING_MODES = {"openviking": "api_key", "openviking-trusted": "trusted"}


def _seed_tests_via_mcp(adapters: tuple[str, ...], tmp_path: Path) -> None:
    from contract_tests.backends.openviking import hand_down

    args = [arg for name in adapters for arg in ("--adapter", name)]
    env = {**os.environ, **hand_down(*(OPENVIKING_MODES[a] for a in adapters if a in OPENVIKING_MODES))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "contract_tests/test_seed_leakage.py", *args, "--via", "mcp", "--basetemp", str(tmp_path / "t")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{7 * len(adapters)} passed" in run.stdout, run.stdout[-2000:]  # all seven, on every adapter: none skipped


@pytest.mark.slow
def test_seed_leakage_tests_1_to_7_pass_through_the_mcp_server(tmp_path: Path) -> None:
    _seed_tests_via_mcp(ADAPTERS, tmp_path)


@pytest.mark.slow
def test_seed_leakage_tests_1_to_7_pass_through_the_mcp_server_on_openviking(tmp_path: Path) -> None:
    from contract_tests.backends.openviking import _unavailable

    for mode in OPENVIKING_MODES.values():
        reason = _unavailable(mode)
        if reason:
            pytest.skip(f"OpenViking ({mode}) unavailable: {reason}")
    _seed_tests_via_mcp(tuple(OPENVIKING_MODES), tmp_path)


@pytest.mark.slow
def test_whole_contract_suite_passes_through_the_mcp_server_on_the_local_store(tmp_path: Path) -> None:
    env = {**os.environ, "VIKING_BRIDGE_CONTRACT_EXAMPLES": os.environ.get("VIKING_BRIDGE_CONTRACT_EXAMPLES", "10")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "contract_tests", "--adapter", "local", "--via", "mcp", "--basetemp", str(tmp_path / "t")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
