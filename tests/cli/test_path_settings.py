"""An empty or unexpanded path setting (what a host writes for an unset `${VAR}`) is a
configuration error naming the setting, raised before anything touches the disk: `Path("")` is
the working directory, which `serve` and `mcp` used to chmod to 600 before failing."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.assembly.settings import load_bridge_settings
from bridge.errors import ConfigurationError
from identity.settings import load_settings


@pytest.mark.parametrize("value", ["", "  ", "${VIKING_KEYS_DB}", "$KEYS_DB/keys.sqlite3", "/srv/${TENANT}/keys.sqlite3"])
def test_an_empty_or_unexpanded_key_store_path_names_the_setting(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_API_KEYS__DB_PATH", value)
    with pytest.raises(ConfigurationError, match="VIKING_BRIDGE_API_KEYS__DB_PATH"):
        load_settings()


@pytest.mark.parametrize("name", ["VIKING_BRIDGE_HOME", "VIKING_BRIDGE_ROLES_FILE", "VIKING_BRIDGE_CONFIG_FILE"])
def test_the_bridge_path_settings_follow_the_same_rule(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(name, "")
    with pytest.raises(ConfigurationError, match=name):
        load_bridge_settings()


def test_a_real_path_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_API_KEYS__DB_PATH", str(tmp_path / "keys$1.sqlite3"))  # a $ inside a name is a name
    assert load_settings().api_keys is not None


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_serve_and_mcp_refuse_before_touching_the_working_directory(command: str, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir(mode=0o755)
    os.chmod(cwd, 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIKING_")}
    env.update(VIKING_BRIDGE_HOME=str(tmp_path / "home"), VIKING_BRIDGE_PROVIDER="api_key", VIKING_BRIDGE_API_KEYS__DB_PATH="",
               VIKING_BRIDGE_API_KEY="vbk_0123456789abcdef_notarealsecret", VIKING_BRIDGE_MODE="production")
    done = subprocess.run([sys.executable, "-m", "bridge.doors.cli.main", command, *(["--port", "1"] if command == "serve" else [])],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "VIKING_BRIDGE_API_KEYS__DB_PATH" in done.stderr and "Traceback" not in done.stderr
    assert stat.S_IMODE(cwd.stat().st_mode) == 0o755 and list(cwd.iterdir()) == []
