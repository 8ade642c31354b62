"""`viking-bridge --url URL --api-key K ...`: the CLI as a client with a real identity."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.service.servicekit import Service


def _cli(service: Service, key: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bridge.doors.cli.main", "--url", service.url, "--api-key", key, *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_cli_client_remembers_from_stdin_and_file_and_recalls_as_the_key_owner(service: Service, tmp_path: Path) -> None:
    key = service.api_key("cli-u1", agent="cli")
    r = _cli(service, key, "remember", "-", "--kind", "preference", stdin="I prefer vim keybindings")
    assert r.returncode == 0 and "acme/user/cli-u1" in r.stdout, r.stderr
    note = tmp_path / "note.txt"
    note.write_text("I prefer the solarized theme", encoding="utf-8")
    assert _cli(service, key, "remember", f"@{note}", "--kind", "preference").returncode == 0
    recalled = _cli(service, key, "recall", "prefer keybindings theme")
    assert recalled.returncode == 0 and "vim keybindings" in recalled.stdout and "solarized" in recalled.stdout
    assert 'for="acme/cli-u1@cli"' in recalled.stdout


def test_cli_client_errors_are_one_line_without_the_key(service: Service) -> None:
    key = service.api_key("cli-u2")
    r = _cli(service, key, "grant", "someone", "acme/ws/alpha", "--reason", "try")
    assert r.returncode == 2 and r.stderr.startswith("viking-bridge: error: 403") and "Traceback" not in r.stderr
    bad = _cli(service, key[:-3] + "abc", "recall", "q")
    assert bad.returncode == 2 and "401" in bad.stderr and key not in bad.stderr
