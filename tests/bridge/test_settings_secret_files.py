"""Every backend secret may come from a file (`VIKING_BRIDGE_<NAME>_FILE`, the way container
secrets are mounted), and hosted Viking is selectable from settings: what start-up refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.assembly.backends import OpenRequest, backend_entry
from bridge.assembly.settings import load_bridge_settings
from bridge.errors import ConfigurationError

SECRET = "s3cret-from-a-mounted-file"
PG_SECRET = "postgresql://bridge:pw-from-file@db.invalid/bridge"

# (variable, how to read the value back from the settings, a value the field accepts)
FILE_SECRETS = [
    ("VIKING_BRIDGE_STATE_URL", lambda s: s.state_url, PG_SECRET),
    ("VIKING_BRIDGE_STATE_MIGRATE_URL", lambda s: s.state_migrate_url, PG_SECRET),
    ("VIKING_BRIDGE_MEMORY_URL", lambda s: s.memory_url, PG_SECRET),
    ("VIKING_BRIDGE_EMBEDDER_API_KEY", lambda s: s.embedder_api_key, SECRET),
    ("VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY", lambda s: s.openviking.root_api_key, SECRET),
    ("VIKING_BRIDGE_OPENVIKING__KEY_STORE_SECRET", lambda s: s.openviking.key_store_secret, SECRET),
    ("VIKING_BRIDGE_VIKING__API_KEY", lambda s: s.viking.api_key, SECRET),
    ("VIKING_BRIDGE_VIKING__ACCESS_KEY", lambda s: s.viking.access_key, SECRET),
    ("VIKING_BRIDGE_VIKING__SECRET_KEY", lambda s: s.viking.secret_key, SECRET),
]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("VIKING_BRIDGE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("VIKING_BRIDGE_HOME", str(tmp_path / "home"))


@pytest.mark.parametrize(("variable", "read", "value"), FILE_SECRETS, ids=[v for v, _, _ in FILE_SECRETS])
def test_every_secret_is_read_from_its_file(variable: str, read, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret"
    path.write_text(f"  {value}\n")
    monkeypatch.setenv(variable + "_FILE", str(path))
    assert read(load_bridge_settings()).get_secret_value() == value


@pytest.mark.parametrize(("variable", "read", "value"), FILE_SECRETS, ids=[v for v, _, _ in FILE_SECRETS])
def test_an_empty_or_missing_secret_file_names_the_setting_never_the_secret(variable: str, read, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path, words in ((empty, "empty"), (tmp_path / "absent", "cannot read")):
        monkeypatch.setenv(variable + "_FILE", str(path))
        with pytest.raises(ConfigurationError, match=words) as exc:
            load_bridge_settings()
        assert variable + "_FILE" in str(exc.value)


def test_a_value_and_a_different_file_for_one_secret_is_refused_without_showing_either(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret"
    path.write_text(SECRET)
    monkeypatch.setenv("VIKING_BRIDGE_VIKING__API_KEY", "another-key-in-the-environment")
    monkeypatch.setenv("VIKING_BRIDGE_VIKING__API_KEY_FILE", str(path))
    with pytest.raises(ConfigurationError, match="both set") as exc:
        load_bridge_settings()
    assert SECRET not in str(exc.value) and "another-key" not in str(exc.value)


def test_settings_rebuilt_from_settings_keep_the_secret_of_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A migrate spec rebuilds the settings from the settings already read, with the file still named.
    path = tmp_path / "secret"
    path.write_text(SECRET)
    monkeypatch.setenv("VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY_FILE", str(path))
    first = load_bridge_settings()
    again = load_bridge_settings(**first.model_dump())
    assert again.openviking.root_api_key.get_secret_value() == SECRET


def _open_viking(**viking: object) -> None:
    settings = load_bridge_settings(backend="viking", viking={"url": "http://127.0.0.1:9", **viking})
    backend_entry("viking").open(OpenRequest(settings, state=None))  # type: ignore[arg-type]


@pytest.mark.parametrize(("viking", "named"), [
    ({"api_key": "k" * 12}, "VIKING_BRIDGE_VIKING__COLLECTION"),
    ({"collection": "c1"}, "VIKING_BRIDGE_VIKING__API_KEY"),
    ({"collection": "c1", "access_key": "AK1234567"}, "__SECRET_KEY"),
    ({"collection": "c1", "api_key": "k" * 12, "access_key": "AK1", "secret_key": "SK1"}, "both set"),
    ({"collections": {"acme": "c1"}, "api_key": "k" * 12}, "VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION"),
    ({"collections": {"not/an id": "c1"}, "api_key": "k" * 12, "global_collection": "g"}, "VIKING_BRIDGE_VIKING__COLLECTIONS"),
])
def test_a_viking_backend_that_cannot_be_opened_is_refused_at_start_up(viking: dict, named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        _open_viking(**viking)


def test_viking_opens_with_its_ledger_under_home_and_per_tenant_collections(tmp_path: Path) -> None:
    settings = load_bridge_settings(backend="viking", viking={"url": "http://127.0.0.1:9", "collections": {"acme": "acme_mem"}, "global_collection": "g", "api_key": "k" * 12})
    backend = backend_entry("viking").open(OpenRequest(settings, state=None))  # type: ignore[arg-type]
    assert backend.config.collections == {"acme": "acme_mem"} and backend.config.shared_collection is None
    assert backend.ledger.path is not None and backend.ledger.path.parent == tmp_path / "home" / "viking"
    assert "k" * 12 not in repr(backend)


def test_openviking_api_key_mode_with_shared_state_needs_the_key_store_secret() -> None:
    # Replicas keep the per-user keys on the shared PostgreSQL, which DBAs and backups read: encrypted only.
    settings = load_bridge_settings(backend="openviking", state_url="postgresql://u:p@db.invalid/x",
                                    openviking={"url": "http://127.0.0.1:9", "root_api_key": "r" * 12, "mode": "api_key"})
    with pytest.raises(ConfigurationError, match="KEY_STORE_SECRET"):
        backend_entry("openviking").open(OpenRequest(settings, state=None))  # type: ignore[arg-type]
