"""`viking-bridge list / get / edit / history` on the local store, and the client-mode options:
accepted after the subcommand, read from VIKING_BRIDGE_URL / VIKING_BRIDGE_API_KEY, never echoed."""

from __future__ import annotations

import json

import pytest

from bridge.doors.cli.main import main, redact


@pytest.fixture(autouse=True)
def dev_home(tmp_path, monkeypatch):
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VIKING_BRIDGE_MODE", "development")
    monkeypatch.setenv("VIKING_MEMORY_USER_ID", "user_01")
    monkeypatch.setenv("VIKING_BRIDGE_SESSION_ID", "cli-session")
    for name in ("VIKING_BRIDGE_PROVIDER", "VIKING_MEMORY_GROUP_ID", "VIKING_BRIDGE_ROLES", "VIKING_BRIDGE_URL", "VIKING_BRIDGE_API_KEY", "VIKING_BRIDGE_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def _json(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_list_get_edit_history_without_knowing_the_scope(capsys):
    assert main(["remember", "I like green tea", "--kind", "preference"]) == 0
    _, scope, memory_id = capsys.readouterr().out.split()[:3]
    page = _json(capsys, ["list"])
    assert set(page) == {"memories", "next_cursor"} and [m["memory_id"] for m in page["memories"]] == [memory_id]
    got = _json(capsys, ["get", memory_id])
    assert got["scope"] == scope and got["content"] == "I like green tea"
    edited = _json(capsys, ["edit", memory_id, "--content", "I like black tea"])
    assert edited["memory_id"] == memory_id and edited["content"] == "I like black tea"
    history = _json(capsys, ["history", memory_id])
    assert history["scope"] == scope and [c["action"] for c in history["changes"]][0] == "edit"
    assert history["changes"][0]["detail"] == {"fields": ["content"]}
    assert main(["get", "no-such-id"]) == 2
    assert "no memory no-such-id" in capsys.readouterr().err


def test_local_json_uses_the_service_keys(capsys):
    assert main(["remember", "the build uses make", "--kind", "fact"]) == 0
    capsys.readouterr()
    recalled = _json(capsys, ["recall", "build make", "--json"])
    assert "memories" in recalled and "items" not in recalled and "query" not in recalled
    assert main(["audit", "--limit", "1"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert "grant_ids" in row and "grants" not in row


def test_client_options_after_the_subcommand_and_from_the_environment(capsys, monkeypatch):
    key = "vbk_secretsecretsecret_0123456789"
    # after the subcommand: parsed (the unreachable URL is the proof it was read), key never shown
    assert main(["recall", "q", "--url", "http://127.0.0.1:9", "--api-key", key]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the service" in err and key not in err
    monkeypatch.setenv("VIKING_BRIDGE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("VIKING_BRIDGE_API_KEY", key)
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the service" in err and key not in err


def test_a_usage_error_never_echoes_the_key(capsys):
    key = "vbk_secretsecretsecret_0123456789"
    with pytest.raises(SystemExit) as done:
        main(["--url", "http://127.0.0.1:9", "--api-key", key, "recall", "q", "--bogus", key])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and key not in err
    assert key not in redact(f"bad {key} and eyJhbGciOi.eyJzdWIi.c2ln", ["--token=" + "plain-token"]) and "eyJzdWIi" not in redact("x eyJhbGciOi.eyJzdWIi.c2ln", [])
