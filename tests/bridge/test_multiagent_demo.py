"""`viking-bridge demo multi-agent`: seed 002's phase-7 run passes its own checks, and fails
(non-zero) when one of its claims does not hold."""

from __future__ import annotations

import io
import re
import subprocess
import sys

from bridge.doors.cli.demo_multiagent import PHASE7_ROLES, run_multiagent_demo


async def test_phase7_run_holds_its_claims_and_reports_seed_002s_counts(tmp_path):
    out = io.StringIO()
    assert await run_multiagent_demo(out, home=tmp_path), out.getvalue()[-3000:]
    text = out.getvalue()
    counts = dict(re.findall(r"^\[([a-z-]+)\] manifest \w+: (\d+) planned \(seed 002", text, re.M))
    assert counts == {"intent": "3", "ontology": "8", "simulation-verifier": "3"}
    assert "purchasing: hot 3" in text and "veto queued" in text and "code generation triggered" in text
    assert text.index("否决") < text.index("(v2)") < text.index("[coder]")  # veto -> retry v2 -> pass -> coder
    assert re.search(r"PROPOSAL-v2\s+\w+ <- \[.*'VETO-v1'\]", text)  # the lineage of v2 names the veto
    assert "[FAIL]" not in text


async def test_the_run_fails_when_a_role_file_breaks_a_claim(tmp_path):
    loose = tmp_path / "loose.toml"  # the verifier reads every tier: the hot-only and 3/8/3 claims fail
    loose.write_text(PHASE7_ROLES.read_text().replace('tiers = ["hot"]\nread_layers', 'tiers = ["hot", "warm", "cold"]\nread_layers'))
    out = io.StringIO()
    assert not await run_multiagent_demo(out, loose, home=tmp_path / "home")
    assert "[FAIL] the simulation verifier's plan holds only hot-tier purchasing memories" in out.getvalue()


def test_the_cli_command_runs_and_exits_zero():
    proc = subprocess.run([sys.executable, "-m", "bridge.doors.cli.main", "demo", "multi-agent", "--dry-run"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"(\d+)/\1 checks passed", proc.stdout)
