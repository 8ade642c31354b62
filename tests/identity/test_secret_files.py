"""Identity and service secrets may come from files (`..._FILE`), by the same rule as the backend
secrets: one implementation (identity/secret_files.py), so what start-up refuses is the same.

Checked for every secret setting outside the bridge settings (those are in
tests/bridge/test_settings_secret_files.py): the file's content becomes the value; a value and a
different file is refused naming the setting; an empty or unreadable file is refused naming the
setting; and no error message carries the secret."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from bridge.assembly import settings as bridge_settings
from bridge.doors.http.settings import load_service_settings
from identity import secret_files
from identity.errors import ConfigurationError
from identity.settings import load_settings

SECRET = "gw-" + "7" * 40  # long enough for the gateway's 32-byte floor
OTHER = "gw-" + "8" * 40


def _gateway(value: Callable[[Any], Any]) -> Callable[[], Any]:
    return lambda: value(load_settings(provider="gateway"))


# (variable, read the value back as text, base environment the setting needs)
FILE_SECRETS: list[tuple[str, Callable[[], Any], dict[str, str]]] = [
    ("VIKING_BRIDGE_GATEWAY__SECRET", _gateway(lambda s: s.gateway.secret.get_secret_value()), {}),
    ("VIKING_BRIDGE_GATEWAY__PREVIOUS_SECRETS", _gateway(lambda s: ",".join(x.get_secret_value() for x in s.gateway.previous_secrets)),
     {"VIKING_BRIDGE_GATEWAY__SECRET": "g" * 40}),
    ("VIKING_BRIDGE_SERVICE_PURGE_API_KEYS", lambda: ",".join(k.get_secret_value() for k in load_service_settings().purge_api_keys), {}),
]
IDS = [v for v, _, _ in FILE_SECRETS]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("VIKING_BRIDGE_"):
            monkeypatch.delenv(name)


def _set(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)


@pytest.mark.parametrize(("variable", "read", "base"), FILE_SECRETS, ids=IDS)
def test_the_secret_is_read_from_its_file(variable: str, read, base: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret"
    path.write_text(f"  {SECRET}\n")
    _set(monkeypatch, {**base, variable + "_FILE": str(path)})
    assert read() == SECRET
    # an empty value beside the file (a host's unset ${VAR}) is nothing given, not a conflict
    monkeypatch.setenv(variable, "")
    assert read() == SECRET


@pytest.mark.parametrize(("variable", "read", "base"), FILE_SECRETS, ids=IDS)
def test_a_value_and_a_different_file_is_refused_naming_the_setting_never_the_secret(variable: str, read, base: dict[str, str], tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret"
    path.write_text(SECRET)
    _set(monkeypatch, {**base, variable + "_FILE": str(path), variable: OTHER})
    with pytest.raises(ConfigurationError) as exc:
        read()
    message = str(exc.value)
    assert variable + "_FILE" in message and "both set" in message
    assert SECRET not in message and OTHER not in message and "7777" not in message and "8888" not in message


@pytest.mark.parametrize(("variable", "read", "base"), FILE_SECRETS, ids=IDS)
def test_an_unreadable_or_empty_file_is_refused_naming_the_setting(variable: str, read, base: dict[str, str], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    not_text = tmp_path / "binary"
    not_text.write_bytes(b"\xff\xfe" + SECRET.encode())
    for path, words in ((empty, "empty"), (tmp_path / "absent", "cannot read"), (not_text, "cannot read")):
        _set(monkeypatch, {**base, variable + "_FILE": str(path)})
        with pytest.raises(ConfigurationError, match=words) as exc:
            read()
        assert variable + "_FILE" in str(exc.value) and SECRET not in str(exc.value)


def test_a_gateway_secret_file_shorter_than_the_floor_is_refused_like_a_short_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "short"
    path.write_text("too-short-secret")
    monkeypatch.setenv("VIKING_BRIDGE_GATEWAY__SECRET_FILE", str(path))
    with pytest.raises(ConfigurationError) as exc:
        load_settings(provider="gateway")
    assert "VIKING_BRIDGE_GATEWAY__SECRET" in str(exc.value) and "at least" in str(exc.value)
    assert "too-short-secret" not in str(exc.value)


def test_the_bridge_settings_use_the_same_implementation() -> None:
    """One rule, one place: the bridge's settings module holds no copy of it."""
    source = Path(bridge_settings.__file__).read_text()
    assert "from identity.secret_files import" in source and "def _read_secret_file" not in source
    assert bridge_settings.SecretFilesFromEnvironment is secret_files.SecretFilesFromEnvironment
