"""The layering the README states is the code's: import-linter's contracts (pyproject.toml,
`[tool.importlinter]`) hold, and they are strong enough to catch each upward import they name.

Why a test and not only a CI step: the README's single test command (`pytest`) then checks the
layering too, for a developer as for CI, and a failure shows import-linter's own report (which
module imports which, at which line). `.venv/bin/lint-imports` runs the same check alone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("lint-imports")
    command = [str(script)] if script.exists() else [shutil.which("lint-imports") or "lint-imports"]
    return subprocess.run([*command, "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_no_module_imports_upward_or_into_the_test_suites() -> None:
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, f"import-linter found layering violations:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
    assert "0 broken" in proc.stdout, proc.stdout[-3000:]


# A miniature project with the same top-level packages and the real contracts: each planted
# import must break a contract (so the contracts are not vacuous, e.g. after a rename).
PLANTS: dict[str, dict[str, str]] = {
    "identity_imports_bridge": {"identity/leak.py": "import bridge.policy\n"},
    "identity_imports_adapters": {"identity/leak.py": "import adapters.base\n"},
    "adapter_imports_policy": {"adapters/leak.py": "from bridge import policy\n"},
    "bridge_imports_contract_suite": {"bridge/leak.py": "def run():\n    import contract_tests.cli\n"},
    "adapter_imports_tests": {"adapters/leak.py": "import tests.kit\n"},
    "contract_suite_imports_tests": {"contract_tests/leak.py": "import tests.kit\n"},
    "benchmark_imports_contract_suite": {"benchmarks/leak.py": "from contract_tests import harness\n"},
    "benchmark_imports_tests": {"benchmarks/leak.py": "import tests.kit\n"},
    "settings_import_the_facade": {"bridge/assembly/settings.py": "import bridge.leak\n", "bridge/leak.py": "import bridge.facade\n"},
    "door_imports_another_door": {"bridge/doors/mcp/leak.py": "import bridge.doors.http\n"},
    "import_cycle_inside_bridge": {"bridge/leak.py": "import bridge.policy\n", "bridge/policy/__init__.py": "import bridge.leak\n"},
}


def _miniature(tmp_path: Path) -> Path:
    project = tmp_path / "mini"
    for package in ("identity", "adapters", "bridge", "contract_tests", "tests"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text("")
    (project / "benchmarks").mkdir()  # a directory of scripts, like the real one (no __init__)
    (project / "benchmarks" / "bench.py").write_text("import bridge\n")
    for module in (
        "policy/__init__", "assembly/__init__", "assembly/settings", "facade", "doors/__init__", "doors/cli",
        "doors/http/__init__", "doors/mcp/__init__", "doors/langgraph/__init__",
    ):
        (project / "bridge" / f"{module}.py").parent.mkdir(parents=True, exist_ok=True)
        (project / "bridge" / f"{module}.py").write_text("")
    for module in ("base", "harness", "cli", "kit"):
        for package in ("adapters", "contract_tests", "tests"):
            (project / package / f"{module}.py").write_text("")
    shutil.copy(ROOT / "pyproject.toml", project / "pyproject.toml")
    return project


def test_the_miniature_project_is_clean(tmp_path: Path) -> None:
    proc = _lint_imports(_miniature(tmp_path))
    assert proc.returncode == 0, f"the miniature project should satisfy every contract:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_each_upward_import_breaks_a_contract(tmp_path: Path, plant: str) -> None:
    project = _miniature(tmp_path)
    for path, source in PLANTS[plant].items():
        (project / path).write_text(source)
    proc = _lint_imports(project)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, f"{plant}: no contract caught {PLANTS[plant]}\n{proc.stdout[-3000:]}"
    assert "leak" in proc.stdout, f"{plant}: the report does not name the offending module:\n{proc.stdout[-3000:]}"
