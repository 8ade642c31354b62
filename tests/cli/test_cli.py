"""The `viking-bridge` command: the demo's isolation checks, one-line errors, dev identity."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bridge.doors.cli.main import main


@pytest.fixture(autouse=True)
def dev_home(tmp_path, monkeypatch):
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VIKING_BRIDGE_MODE", "development")
    monkeypatch.setenv("VIKING_MEMORY_USER_ID", "user_01")
    monkeypatch.setenv("VIKING_BRIDGE_SESSION_ID", "cli-session")
    for name in ("VIKING_BRIDGE_PROVIDER", "VIKING_MEMORY_GROUP_ID", "VIKING_BRIDGE_ROLES"):
        monkeypatch.delenv(name, raising=False)


def test_demo_passes_every_isolation_check(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "[FAIL]" not in out and "isolation checks passed" in out
    assert "[PASS] a user_id forged in the query does not widen bob's filter" in out


def test_remember_recall_forget_audit_round_trip(capsys):
    assert main(["remember", "我喜欢深色主题", "--kind", "preference"]) == 0
    status, scope, memory_id = capsys.readouterr().out.split()[:3]
    assert (status, scope) == ("active", "local/user/user_01")
    assert main(["recall", "深色主题"]) == 0
    assert memory_id in capsys.readouterr().out
    assert main(["forget", scope, memory_id]) == 0
    assert capsys.readouterr().out.strip() == "forgotten"
    assert main(["recall", "深色主题"]) == 0
    assert memory_id not in capsys.readouterr().out
    assert main(["audit", "--action", "forget"]) == 0
    assert memory_id in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["recall", ""], "query must not be empty"),
        (["remember", "x", "--kind", "bogus"], "unknown kind 'bogus'"),
        (["remember", "x", "--kind", "note", "--visibility", "tenant"], "needs the 'admin' role"),
        (["forget", "local/user/user_01"], "forget needs SCOPE and MEMORY_ID"),
        (["forget", "local/../x", "abc"], "not a memory reference"),
        (["recall", "x", "--purpose", "gossip"], "unknown purpose"),
    ],
)
def test_errors_are_one_line_without_traceback(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_production_mode_refuses_the_dev_identity(capsys, monkeypatch):
    monkeypatch.setenv("VIKING_BRIDGE_MODE", "production")
    assert main(["recall", "anything"]) == 2
    err = capsys.readouterr().err
    assert "disabled in production" in err and "VIKING_BRIDGE_PROVIDER=jwt" in err


def test_bad_setting_names_the_variable(capsys, monkeypatch):
    monkeypatch.setenv("VIKING_BRIDGE_MAX_QUERY_CHARS", "lots")
    assert main(["recall", "anything"]) == 2
    assert "VIKING_BRIDGE_MAX_QUERY_CHARS" in capsys.readouterr().err


def test_help_is_available_everywhere():
    for argv in (["--help"], ["demo", "--help"], ["recall", "--help"], ["remember", "--help"], ["forget", "--help"], ["audit", "--help"]):
        done = subprocess.run([sys.executable, "-m", "bridge.doors.cli.main", *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "usage: viking-bridge" in done.stdout, argv
