"""Store files are private: database + -wal/-shm 0600, directories created 0700."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from identity.providers.api_keys import ApiKeyStore
from identity.sessions import SqliteSessionRegistry
from identity.storage.sqlite import connect_durable, ensure_private_dir, private_file_paths


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask that made the stores world-readable (022): the fix must not depend on it."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_other_users_cannot_read_a_new_database_or_its_wal_and_shm(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    conn = connect_durable(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    db, wal, shm = private_file_paths(path)[:3]
    assert wal.exists() and shm.exists()  # WAL mode, open connection: all three are on disk
    assert (_mode(db), _mode(wal), _mode(shm)) == (0o600, 0o600, 0o600)
    conn.close()


def test_other_users_cannot_read_a_database_created_world_readable_by_an_older_release(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = connect_durable(path)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    for p in private_file_paths(path):
        if p.exists():
            os.chmod(p, 0o644)
    connect_durable(path).close()
    assert _mode(path) == 0o600


def test_a_new_store_directory_is_private(tmp_path: Path) -> None:
    path = tmp_path / "home" / "state" / "keys.sqlite3"
    connect_durable(path).close()
    assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700  # every directory created


def test_ensure_private_dir_creates_0700(tmp_path: Path) -> None:
    assert _mode(ensure_private_dir(tmp_path / "new")) == 0o700


def test_ensure_private_dir_warns_once_naming_a_wider_existing_directory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wide = tmp_path / "wide"
    wide.mkdir()
    os.chmod(wide, 0o755)
    with caplog.at_level(logging.WARNING, logger="identity.storage.sqlite"):
        ensure_private_dir(wide)
        ensure_private_dir(wide)
    warnings = [r for r in caplog.records if str(wide) in r.getMessage()]
    assert len(warnings) == 1 and "0755" in warnings[0].getMessage()
    assert _mode(wide) == 0o755  # warned, not silently changed


def test_ensure_private_dir_is_quiet_about_a_private_directory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with caplog.at_level(logging.WARNING, logger="identity.storage.sqlite"):
        ensure_private_dir(private)
    assert not [r for r in caplog.records if str(private) in r.getMessage()]


def test_tightening_never_widens_a_stricter_file(tmp_path: Path) -> None:
    path = tmp_path / "strict.sqlite3"
    connect_durable(path).close()
    os.chmod(path, 0o400)
    from identity.storage.sqlite import _tighten

    _tighten(path)
    assert _mode(path) == 0o400


@pytest.mark.parametrize("store", [ApiKeyStore, SqliteSessionRegistry])
def test_other_users_cannot_read_identity_stores(tmp_path: Path, store: type) -> None:
    path = tmp_path / "identity" / "store.sqlite3"
    opened = store(path)
    try:
        for p in private_file_paths(path):
            if p.exists():
                assert _mode(p) == 0o600, p
        assert _mode(path.parent) == 0o700
    finally:
        opened.close()
