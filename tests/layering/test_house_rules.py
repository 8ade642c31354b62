"""The shape of the house, checked: what a reader can rely on finding, and what keeps it findable.

- `bridge/` holds at most eight modules at its root: everything else lives in a folder named for
  its concern (operations, policy, handlers, writes, recall, state, assembly, doors, ...).
- No module in `bridge/` or `identity/` is over 400 lines, none in `adapters/` over 600: a module
  that grows past that holds two jobs, and should be split by concern.
- No `type: ignore[arg-type]` in `bridge/`: every operation is built by keyword, so a field added
  later cannot shift arguments silently, and the type checker is never told not to look.
- No code comment or docstring cites an issue or finding number: numbers mean nothing to a reader
  of the repository; a sentence that says why does.
- Every operations module has a handler of the same name: `handlers/<name>.py`, or for recall, whose
  handler is a pipeline of stages, the `bridge/recall/` package.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMITS = {"bridge": 400, "identity": 400, "adapters": 600}
CITATION = re.compile(r"\b(issues?|findings?|items?)\s+\d+\b", re.IGNORECASE)


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def test_the_bridge_root_holds_at_most_eight_modules() -> None:
    root = sorted(p.name for p in (ROOT / "bridge").glob("*.py"))
    assert len(root) <= 8, f"bridge/ root has {len(root)} modules: {root}; give the new one a folder named for its concern"


@pytest.mark.parametrize("package", sorted(LIMITS))
def test_no_module_outgrows_its_package_limit(package: str) -> None:
    limit = LIMITS[package]
    big = {str(p.relative_to(ROOT)): n for p in _modules(package) if (n := len(p.read_text().splitlines())) > limit}
    assert not big, f"modules over {limit} lines in {package}/: {big}; split them by concern"


def test_no_argument_type_check_is_switched_off_in_the_bridge() -> None:
    found = [f"{p.relative_to(ROOT)}:{i}" for p in _modules("bridge") for i, line in enumerate(p.read_text().splitlines(), 1) if "type: ignore[arg-type]" in line]
    assert not found, f"type: ignore[arg-type] in {found}: build operations by keyword and type the value instead"


@pytest.mark.parametrize("package", ["bridge", "identity", "adapters", "contract_tests"])
def test_no_comment_cites_an_issue_number(package: str) -> None:
    found = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()[:80]}"
        for p in _modules(package) for i, line in enumerate(p.read_text().splitlines(), 1) if CITATION.search(line)
    ]
    assert not found, "say why in words instead of citing a number:\n" + "\n".join(found[:20])


def test_every_operations_module_has_a_handler_module_of_the_same_name() -> None:
    shared = {"__init__", "base", "fields", "limits"}
    operations = {p.stem for p in (ROOT / "bridge" / "operations").glob("*.py")} - shared
    handlers = {p.stem for p in (ROOT / "bridge" / "handlers").glob("*.py")} - {"__init__"}
    handlers |= {p.name for p in (ROOT / "bridge").iterdir() if (p / "__init__.py").is_file()}
    assert operations - handlers == set(), f"operations modules without a handler module of the same name: {sorted(operations - handlers)}"
