"""The contract suite never knows a backend by name: every backend, built-ins included, is found
through the `viking_bridge.contract_backends` entry points, and a broken or dishonest entry is
reported as unavailable (skipped with its reason), never silently left out."""

from __future__ import annotations

import ast
import sys
import types
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from contract_tests import registry

ROOT = Path(__file__).resolve().parents[2]
SUITE_MACHINERY = ("registry.py", "plugin.py", "conftest.py", "cli.py", "harness.py", "backends/__init__.py")


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, registry.AdapterFactory]:
    fresh: dict[str, registry.AdapterFactory] = {}
    monkeypatch.setattr(registry, "_REGISTRY", fresh)
    monkeypatch.setattr(registry, "_LOADED", {})
    return fresh


def _only_these(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep for ep in eps if ep.group == group])


def test_the_built_in_backends_are_found_through_entry_points() -> None:
    # The real registry (a module registers once, at its first import; loading is idempotent).
    declared = {ep.name for ep in entry_points(group=registry.BACKENDS_GROUP)}
    assert {"local", "viking", "openviking", "openviking-trusted"} <= declared, declared
    failures = registry.load_registered_backends()
    assert set(registry.registered_adapters()) >= declared
    assert "local" not in failures and registry.get_adapter("local").why_unavailable() is None


def test_the_suite_machinery_never_names_a_backend() -> None:
    names = {ep.name for ep in entry_points(group=registry.BACKENDS_GROUP)}
    for relative in SUITE_MACHINERY:
        path = ROOT / "contract_tests" / relative
        tree = ast.parse(path.read_text(), str(path))
        named = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                        and (n.value in names or n.value.startswith("contract_tests.backends."))})
        assert not named, f"contract_tests/{relative} names backends {named}: register them through {registry.BACKENDS_GROUP!r}"


def test_a_third_party_backend_registers_the_same_way(empty_registry: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "thirdparty_contract_backend.py").write_text(
        "import contextlib\n"
        "from contract_tests.registry import register_adapter\n"
        "@register_adapter('mystore', description='a third party store')\n"
        "@contextlib.asynccontextmanager\n"
        "async def mystore():\n"
        "    yield None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "thirdparty_contract_backend", raising=False)
    _only_these(monkeypatch, EntryPoint("mystore", "thirdparty_contract_backend", registry.BACKENDS_GROUP))
    assert "mystore" not in registry.registered_adapters()
    assert registry.load_registered_backends() == {}
    factory = registry.get_adapter("mystore")
    assert factory.description == "a third party store" and factory.why_unavailable() is None
    sys.modules.pop("thirdparty_contract_backend", None)


def test_a_backend_whose_module_cannot_be_imported_is_skipped_with_the_reason(empty_registry: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    _only_these(monkeypatch, EntryPoint("ghost", "no_such_module_for_the_contract_suite", registry.BACKENDS_GROUP))
    failures = registry.load_registered_backends()
    assert "ModuleNotFoundError" in failures["ghost"]
    reason = registry.get_adapter("ghost").why_unavailable()
    assert reason and "no_such_module_for_the_contract_suite" in reason


def test_a_module_that_does_not_register_its_entry_point_name_is_reported(empty_registry: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "silent_contract_backend", types.ModuleType("silent_contract_backend"))
    _only_these(monkeypatch, EntryPoint("promised", "silent_contract_backend", registry.BACKENDS_GROUP))
    failures = registry.load_registered_backends()
    assert "did not register_adapter('promised')" in failures["promised"]
    assert registry.get_adapter("promised").why_unavailable() == failures["promised"]


def test_an_unknown_adapter_name_says_how_backends_are_found(empty_registry: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    _only_these(monkeypatch)
    registry.load_registered_backends()
    with pytest.raises(KeyError, match="viking_bridge.contract_backends"):
        registry.get_adapter("typo")


def test_no_registered_backend_is_a_usage_error_not_a_silent_skip(empty_registry: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from contract_tests.conftest import selected_adapters

    _only_these(monkeypatch)
    config = types.SimpleNamespace(getoption=lambda name: [])
    with pytest.raises(pytest.UsageError, match="no backend is registered"):
        selected_adapters(config)  # type: ignore[arg-type]
