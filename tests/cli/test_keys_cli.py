"""`viking-bridge keys`: a mistake is one clear line (never a traceback), a role the policy does
not know is refused with the real ones named, and `list` shows when a key was made and last used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.doors.cli.main import main
from bridge.policy.config import Role
from identity.providers.api_keys import ApiKeyStore, parse_api_key


@pytest.fixture()
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "keys.sqlite3"
    monkeypatch.setenv("VIKING_BRIDGE_API_KEYS__DB_PATH", str(path))
    monkeypatch.delenv("VIKING_BRIDGE_STATE_URL", raising=False)
    return path


def _issue(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["keys", "issue", "--tenant", "acme", "--user", "alice", "--agent", "cli", *extra]) == 0
    return capsys.readouterr().out.strip()


@pytest.mark.parametrize("bad", ["nope", "0123", "ZZZZZZZZZZZZZZZZ"])
def test_revoking_a_bad_id_is_one_line(db: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    assert main(["keys", "revoke", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "16 lowercase hex" in err


def test_revoking_by_the_whole_key_says_use_the_id_and_never_echoes_it(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = _issue(capsys)
    assert main(["keys", "revoke", key]) == 2
    err = capsys.readouterr().err
    assert "key id" in err and key not in err and parse_api_key(key)[1] not in err and "Traceback" not in err
    key_id = parse_api_key(key)[0]
    assert main(["keys", "revoke", key_id]) == 0 and f"revoked {key_id}" in capsys.readouterr().out


def test_an_unknown_role_is_refused_and_the_real_roles_are_listed(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["keys", "issue", "--tenant", "acme", "--user", "alice", "--agent", "cli", "--role", "superuser"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "superuser" in err and all(r.value in err for r in Role)
    assert _issue(capsys, "--role", "approver").startswith("vbk_")


def test_list_shows_creation_and_last_use(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = _issue(capsys)
    assert main(["keys", "list"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["created_at"].endswith("+00:00") and row["last_used_at"] is None
    store = ApiKeyStore(db)
    try:
        store.verify(key)
    finally:
        store.close()
    assert main(["keys", "list"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["last_used_at"] is not None and row["last_used_at"] >= row["created_at"]
