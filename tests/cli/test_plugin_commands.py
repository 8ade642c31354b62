"""`viking-bridge contract` is found through the `viking_bridge.commands` entry points, so the
library never imports the contract suite; without the entry point the command fails with one
clear line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from bridge.doors.cli import main as cli
def _only_these(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    monkeypatch.setattr(cli, "entry_points", lambda group, name: [ep for ep in eps if ep.group == group and ep.name == name])


def test_contract_command_is_dispatched_through_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    module = type(sys)("fake_contract_command")
    module.main = lambda argv: seen.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_contract_command", module)
    _only_these(monkeypatch, EntryPoint("contract", "fake_contract_command:main", cli.COMMANDS_GROUP))
    assert cli.main(["contract", "--adapter", "local"]) == 7
    assert seen == [["--adapter", "local"]]


def test_contract_command_without_its_package_fails_with_one_clear_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _only_these(monkeypatch)
    assert cli.main(["contract", "--adapter", "local"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "contract suite" in err and cli.COMMANDS_GROUP in err, err


def test_contract_command_whose_module_is_broken_fails_with_one_clear_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _only_these(monkeypatch, EntryPoint("contract", "no_such_contract_module:main", cli.COMMANDS_GROUP))
    assert cli.main(["contract"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot be loaded" in err and "no_such_contract_module" in err, err


def test_contract_command_whose_function_is_missing_fails_with_one_clear_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "contract_module_without_main", type(sys)("contract_module_without_main"))
    _only_these(monkeypatch, EntryPoint("contract", "contract_module_without_main:main", cli.COMMANDS_GROUP))
    assert cli.main(["contract"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot be loaded" in err, err


def test_the_installed_contract_command_runs_the_suite_cli() -> None:
    proc = subprocess.run([sys.executable, "-m", "bridge.doors.cli.main", "contract", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "usage: viking-bridge contract" in proc.stdout and "--adapter" in proc.stdout, proc.stdout
