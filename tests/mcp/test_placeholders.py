"""A host config whose `${...}` placeholders were not expanded is refused before anything is
opened: no directory literally named `${VIKING_BRIDGE_HOME}` is created (one child process, ~2 s)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from identity.errors import IdentityConfigurationError
from identity.settings import refuse_placeholders
from tests.mcp.mcpkit import CONSOLE_SCRIPT


def test_refuse_placeholders_names_every_variable_and_allows_a_bare_dollar():
    with pytest.raises(IdentityConfigurationError, match="VIKING_BRIDGE_API_KEY, VIKING_BRIDGE_HOME"):
        refuse_placeholders({"VIKING_BRIDGE_HOME": "${VIKING_BRIDGE_HOME}", "VIKING_BRIDGE_API_KEY": "${KEY}", "OTHER": "${X}"})
    refuse_placeholders({"VIKING_BRIDGE_GATEWAY__SECRET": "pa$$word-with-$DOLLARS", "OTHER": "${X}"})


def test_the_mcp_server_creates_nothing_with_unexpanded_placeholders(tmp_path: Path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "VIKING_BRIDGE_HOME": "${VIKING_BRIDGE_HOME}",
           "VIKING_BRIDGE_PROVIDER": "api_key", "VIKING_BRIDGE_API_KEYS__DB_PATH": "${VIKING_BRIDGE_API_KEYS__DB_PATH}",
           "VIKING_BRIDGE_API_KEY": "${VIKING_BRIDGE_API_KEY}"}
    done = subprocess.run([CONSOLE_SCRIPT, "mcp"], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unexpanded placeholder" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "something was created before the settings were refused"
