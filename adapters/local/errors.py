"""How the local store fails: SQLite's raw errors mapped into the project's one error tree.

    adapters.errors.BackendUnavailable + identity.errors.StorageUnavailable (both are BackendUnavailable)
     ├── StorageBusy          another connection held the write lock past `busy_timeout_s`;
     │                        retryable (the lock holder finishes, the retry goes through)
     ├── StorageFull          the disk or the database's page limit is full; NOT retryable:
     │                        a full disk needs an operator, retrying in a loop only adds load.
     │                        Still an `BackendUnavailable` (HTTP 503): nothing is wrong with the request.
     ├── StorageIOError       any other I/O failure (cannot open, read-only file, I/O error,
     │                        an unexpected SQLite error); not retryable
     └── EmbeddingFailed      the embedder raised (retryable) or returned vectors of the wrong
                              shape or with NaN (not retryable: nothing is stored)
    adapters.errors.BackendError + identity.errors.CorruptStorage
     └── CorruptStore         the file is damaged, not a database, emptied, missing although a
          │                   store was expected, or another store; `path` names the file
          └── DamagedRecord   (also adapters.errors.CorruptRecord) one row cannot be decoded
                              (unknown status, broken JSON); the row is quarantined, the rest of
                              the store keeps serving

What this module must never do: put memory content, metadata or any secret into a message
(SQLite's own messages carry none), or let a raw `sqlite3.Error` reach a caller: every public
method of `LocalBackend` runs inside `storage_errors`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Iterator

from adapters.errors import BackendError, CorruptRecord, BackendUnavailable
from adapters.scopes import ScopeKey
from identity.errors import CorruptStorage
from identity.errors import StorageUnavailable as _StorageUnavailable

__all__ = ["StorageBusy", "StoreInUse", "StorageFull", "StorageIOError", "EmbeddingFailed", "CorruptStore", "DamagedRecord", "storage_error", "storage_errors"]

BACKEND = "local"

# SQLite primary result codes (https://sqlite.org/rescode.html); extended codes carry them in the low byte
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_NOTADB = 26
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


class _LocalStorageUnavailable(BackendUnavailable, _StorageUnavailable):
    """Base of the local store's storage failures; `path` names the database file."""

    def __init__(self, message: str, *, path: str | Path, retry_after: float | None = None, scope: ScopeKey | None = None) -> None:
        super().__init__(message, retry_after=retry_after, backend=BACKEND, scope=scope)
        self.path = str(path)  # after super(): identity's StorageUnavailable initialises it to None


class StorageBusy(_LocalStorageUnavailable):
    """The database was locked by another connection for longer than the busy timeout."""

    retryable = True


class StoreInUse(_LocalStorageUnavailable):
    """Another process holds the store open while this one needs it alone (re-embedding in
    place), or the store is being re-embedded while this process tries to open it."""

    retryable = False


class StorageFull(_LocalStorageUnavailable):
    """The disk (or the database's `max_page_count`) is full. An operator must make room."""

    retryable = False


class StorageIOError(_LocalStorageUnavailable):
    """The store cannot be read or written for another reason (I/O error, permissions)."""

    retryable = False


class EmbeddingFailed(BackendUnavailable):
    """The embedder could not turn the text into a usable vector; nothing was stored."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        self.retryable = retryable
        super().__init__(message, backend=BACKEND)


class CorruptStore(BackendError, CorruptStorage):
    """The store's file is damaged, replaced, emptied or missing; `path` names the file(s)."""

    def __init__(self, message: str, *, path: str | Path, scope: ScopeKey | None = None) -> None:
        BackendError.__init__(self, message, backend=BACKEND, scope=scope)
        self.path = str(path)


class DamagedRecord(CorruptStore, CorruptRecord):
    """One row of the store cannot be decoded. Raised for that row only; the row is quarantined."""

    def __init__(self, message: str, *, path: str | Path, scope: ScopeKey | None = None, memory_id: str | None = None) -> None:
        self.memory_id = memory_id
        super().__init__(message, path=path, scope=scope)


def storage_error(exc: BaseException, path: str | Path) -> BackendError:
    """The member of the tree that says what `exc` (a sqlite3.Error or OSError) means for `path`."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    lowered = text.lower()
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or (primary is None and "locked" in lowered):
        return StorageBusy(f"the store at {path} is locked by another connection ({text}); retry later", path=path, retry_after=1.0)
    if primary == _SQLITE_FULL or (primary is None and "is full" in lowered):
        return StorageFull(f"the store at {path} cannot grow: {text}; free disk space, then retry", path=path)
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or (primary is None and ("malformed" in lowered or "not a database" in lowered)):
        return CorruptStore(f"the store file {path} is damaged ({text}); restore it from a backup", path=path)
    if isinstance(exc, OSError):
        return StorageIOError(f"the store at {path} cannot be used: {exc.strerror or text}", path=path)
    name = getattr(exc, "sqlite_errorname", type(exc).__name__)
    return StorageIOError(f"the store at {path} failed: {name}: {text}", path=path)


@contextlib.contextmanager
def storage_errors(path: str | Path) -> Iterator[None]:
    """Run a block of store work; a raw SQLite or OS error leaves it as a member of the tree."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise storage_error(exc, path) from exc
