"""Seed 003's seven leakage tests pass through the LangGraph store (`--via langgraph`).

Every write of the seed tests is a store put into the namespace of the visibility it asks for,
every recall a store search (contract_tests/langgraph_transport.py). The local store runs in the
default `pytest` run (a few seconds); the Viking simulator is slow (OpenViking also passes: `pytest contract_tests/test_seed_leakage.py --adapter openviking --via langgraph`; not here, so no second server starts).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(adapter: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "contract_tests/test_seed_leakage.py", "--adapter", adapter,
         "--via", "langgraph", "--basetemp", str(tmp_path / "t")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )


def test_seed_leakage_tests_hold_through_the_langgraph_store_on_the_local_backend(tmp_path: Path) -> None:
    run = _run("local", tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "7 passed" in run.stdout, run.stdout[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["viking"])
def test_seed_leakage_tests_hold_through_the_langgraph_store(adapter: str, tmp_path: Path) -> None:
    run = _run(adapter, tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "7 passed" in run.stdout, run.stdout[-2000:]
