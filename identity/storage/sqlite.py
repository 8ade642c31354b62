"""One way to open the project's SQLite files: durable (WAL, fsync on commit) and private (0600).

Every store (API keys, session bindings, nonces, the bridge's audit/grants/manifests, the local
memory store) opens its file through `connect_durable`, so "an acknowledged write survives a
crash", "two processes may share the file" and "nobody else on the machine can read it" mean the
same thing everywhere. It lives in `identity`, the bottom layer, so every package can use it
without a dependency cycle.

Privacy: memories, audit rows, grants, session bindings and key hashes
must not be readable by other local users. The database file is created 0600 *before* SQLite
opens it (an `os.open` with an explicit mode, no process-wide umask change, so other threads
are unaffected); SQLite gives its `-wal` and `-shm` files the database file's mode, and
`connect_durable` tightens all three with `chmod` after the journal-mode switch anyway, which
also repairs files created 0644 by older versions. Directories this module creates are 0700;
`ensure_private_dir` warns (once per directory and process) when an existing one is wider.

What it must never do: widen a file's permissions, follow a planted symlink when creating a
database file, or leave a raw `sqlite3`/`OSError` for callers to interpret (see `storage_error`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
from pathlib import Path

from identity.errors import (
    ConfigurationError,
    CorruptStorage,
    StorageUnavailable,
    VikingBridgeError,
)

__all__ = [
    "FILE_MODE",
    "DIR_MODE",
    "connect_durable",
    "ensure_private_dir",
    "storage_error",
]

log = logging.getLogger(__name__)

FILE_MODE = 0o600
DIR_MODE = 0o700
_SIDECARS = ("-wal", "-shm", "-journal")
_warned_dirs: set[str] = set()
_warned_lock = threading.Lock()


def ensure_private_dir(path: str | Path) -> Path:
    """Create `path` (and missing parents) with mode 0700; warn if an existing one is wider.

    The warning names the directory and its mode, once per directory per process, and the
    directory is left as it is: it may be a shared location the operator chose on purpose, and
    the files inside are 0600 regardless. A wider directory still lets others list (or, if
    writable, replace) the store files, which is why it is worth saying.
    """
    path = Path(path)
    try:
        missing = [p for p in (path, *path.parents) if not p.exists()]
        for directory in reversed(missing):  # every directory we create is private, not just the leaf
            directory.mkdir(mode=DIR_MODE, exist_ok=True)
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise ConfigurationError(f"store directory {path} cannot be created: {exc.strerror or exc}") from None
    if mode & 0o077:
        key = str(path.resolve())
        with _warned_lock:
            first = key not in _warned_dirs
            _warned_dirs.add(key)
        if first:
            log.warning(
                "store directory %s has mode %04o: other local users can list or reach its files; "
                "chmod 700 it", path, mode,
            )
    return path


def _create_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 if it does not exist (an empty file is a valid SQLite
    database). O_EXCL never follows a symlink, so a planted link is refused, not written through."""
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, FILE_MODE)
    except FileExistsError:
        return  # created by someone else meanwhile, or already there: tightened below
    os.close(fd)


def _tighten(path: Path) -> None:
    """chmod `path` to at most 0600 if it exists; never widens, never fails the open."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        return
    mode = stat.S_IMODE(st.st_mode)
    if mode & ~FILE_MODE:
        try:
            os.chmod(path, mode & FILE_MODE)
        except OSError as exc:  # not our file (shared deployment): say so, keep going
            log.warning("cannot restrict %s (mode %04o) to 0600: %s", path, mode, exc.strerror or exc)


def private_file_paths(path: str | Path) -> tuple[Path, ...]:
    """The database file and the sidecars SQLite may create next to it."""
    path = Path(path)
    return (path, *(path.with_name(path.name + suffix) for suffix in _SIDECARS))


def connect_durable(path: str | Path, *, busy_timeout_s: float = 10.0) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) in WAL mode with synchronous=FULL,
    whose database file and -wal/-shm files are 0600 (see the module docstring)."""
    path = Path(path)
    if not path.parent.exists():
        ensure_private_dir(path.parent)
    _create_private_file(path)
    _tighten(path)
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    except BaseException:
        conn.close()
        raise
    for sidecar in private_file_paths(path)[1:]:
        _tighten(sidecar)
    return conn


def storage_error(exc: sqlite3.Error | OSError, path: str | Path, what: str = "store") -> VikingBridgeError:
    """Map a raw SQLite/OS error to the tree: a held lock or a full disk is retryable
    (`StorageUnavailable`), a damaged or foreign file is `CorruptStorage` naming the file, the
    rest is a `ConfigurationError` naming the file. Return it; the caller raises `from None`."""
    text = str(exc)
    lowered = text.lower()
    if isinstance(exc, sqlite3.Error):
        if "locked" in lowered or "busy" in lowered:
            return StorageUnavailable(f"{what} at {path} is locked by another process: {text}", path=str(path))
        if "disk is full" in lowered or "disk full" in lowered:
            return StorageUnavailable(f"{what} at {path}: the disk is full", path=str(path))
        if "malformed" in lowered or "not a database" in lowered or "corrupt" in lowered:
            return CorruptStorage(f"{what} at {path} is damaged: {text}", path=str(path))
    return ConfigurationError(f"{what} at {path} cannot be used: {getattr(exc, 'strerror', None) or text}")
