"""Installing viking-bridge does not load the contract suite's pytest plugin into other projects'
pytest sessions: it is opt-in (`-p contract_tests.plugin` or a conftest line), never a
`pytest11` entry point. Runs pytest in a directory outside this repository with the installed
package, as another project would."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    project = tmp_path / "other-project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")  # its own rootdir: nothing of ours applies
    (project / "test_theirs.py").write_text("def test_theirs():\n    assert 1 + 1 == 2\n")
    assert ROOT not in project.parents
    return project


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_installing_viking_bridge_registers_no_pytest_plugin() -> None:
    ours = [ep for ep in entry_points(group="pytest11") if ep.value.split(":")[0].split(".")[0] in ("contract_tests", "bridge", "adapters", "identity")]
    assert not ours, f"viking-bridge registers pytest plugins in every pytest session: {ours}"


def test_another_projects_pytest_session_does_not_load_the_contract_plugin(other_project: Path) -> None:
    listed = _pytest(other_project, "--co", "-q")
    assert listed.returncode == 0 and "test_theirs.py::test_theirs" in listed.stdout, listed.stdout + listed.stderr
    helped = _pytest(other_project, "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--adapter" not in helped.stdout and "contract suite" not in helped.stdout, (
        "the contract suite's options appear in an unrelated project's pytest:\n" + helped.stdout[-3000:])
    refused = _pytest(other_project, "--co", "-q", "--adapter", "local")
    assert refused.returncode != 0 and "--adapter" in refused.stderr, refused.stdout + refused.stderr


def test_the_plugin_loads_when_asked_for(other_project: Path) -> None:
    helped = _pytest(other_project, "-p", "contract_tests.plugin", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--adapter" in helped.stdout and "--contract-examples" in helped.stdout, helped.stdout[-3000:]
