"""No import circle between sibling modules anywhere in the library (`identity`, `adapters`,
`bridge`), counting the imports only a type checker follows (`if TYPE_CHECKING:`).

Why a second check beside import-linter's `acyclic_siblings` contract: that contract (like the
whole `[tool.importlinter]` session) ignores TYPE_CHECKING imports, which hid a circle between
`adapters.errors` and `adapters.scopes`, between the facade and its openers, and between the
runtime and the recall stages. A type-only import that closes a circle is as much a defect as a
runtime one: it is the same dependency, only hidden from the linter.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

LIBRARY_PACKAGES = ("identity", "adapters", "bridge")


def circles(*packages: str) -> dict[str, set[tuple[str, str]]]:
    """The imports grimp would cut to make each (sub)package's children acyclic, by package;
    empty when there is no circle anywhere below `packages`."""
    graph = grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)
    found: dict[str, set[tuple[str, str]]] = {}
    pending = list(packages)
    while pending:
        package = pending.pop()
        children = graph.find_children(package)
        if not children:
            continue
        breakers = graph.nominate_cycle_breakers(package)
        if breakers:
            found[package] = set(breakers)
        pending.extend(children)
    return found


def test_the_library_has_no_circle_even_through_type_checking_imports() -> None:
    assert circles(*LIBRARY_PACKAGES) == {}


def test_a_type_checking_circle_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "planted_circle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planted_circle.scopes import Key\n")
    (package / "scopes.py").write_text("from planted_circle.errors import *\nclass Key: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = circles("planted_circle")
    assert set(found) == {"planted_circle"}
    assert {frozenset(edge) for edge in found["planted_circle"]} <= {frozenset({"planted_circle.errors", "planted_circle.scopes"})}
    sys.modules.pop("planted_circle", None)
