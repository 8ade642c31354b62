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


def test_cli_client_list_get_edit_history_by_id_alone_in_the_local_shape(service: Service, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Flags after the command, the key from VIKING_BRIDGE_API_KEY (never on the command line),
    and the same JSON keys as the local CLI prints (the bridge's own result models). In-process:
    each CLI subprocess costs seconds of imports."""
    import json

    from bridge.doors.cli.main import main
    from bridge.results import MemoryHistory, MemoryPage, MemoryRecord

    key = service.api_key("cli-u3")
    monkeypatch.setenv("VIKING_BRIDGE_URL", service.url)
    monkeypatch.setenv("VIKING_BRIDGE_API_KEY", key)
    monkeypatch.delenv("VIKING_BRIDGE_TOKEN", raising=False)

    def run(*args: str) -> dict:
        code = main(list(args))
        out = capsys.readouterr()
        assert code == 0, out.err
        return json.loads(out.out)

    written = service.client(key).post("/api/v1/memories", json={"content": "I take the 8:10 train", "kind": "fact"}).json()
    page = run("list", "--limit", "5")
    assert set(page) == set(MemoryPage.model_fields) and written["memory_id"] in [m["memory_id"] for m in page["memories"]]
    got = run("get", written["memory_id"])
    assert set(got) == set(MemoryRecord.model_fields) and got["scope"] == written["scope"]
    edited = run("edit", written["memory_id"], "--content", "I take the 8:40 train")
    assert edited["content"] == "I take the 8:40 train"
    history = run("history", written["memory_id"], "--url", service.url)  # a global option after the command
    assert set(history) == set(MemoryHistory.model_fields) and history["changes"][0]["action"] == "edit"
    assert main(["get", "nope-" + written["memory_id"]]) == 2
    err = capsys.readouterr().err
    assert "404" in err and key not in err
