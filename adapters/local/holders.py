"""Who holds a local store: a shared `flock` per open `LocalBackend`, an exclusive one to re-embed.

Every process that opens the store (a service worker, the CLI, MCP) holds a shared lock on
`<store>/holders.lock` for as long as it has the store open. Re-embedding in place changes every
vector and the recorded embedder; a process that had the store open would then refuse all its
searches and writes (its embedder no longer matches). So re-embedding first converts its own
shared lock into an exclusive one, without waiting: if anybody else holds the store, it is
refused (`StoreInUse`) before anything changes, and the holders keep working. While a re-embed
holds the store, a new opener is refused the same way instead of reading a half-moved store.

The kernel drops a lock when its process dies, so a crashed holder never blocks the store. Where
`fcntl` does not exist (not POSIX) holding is a no-op and re-embedding is not coordinated.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from adapters.local.errors import StoreInUse

__all__ = ["StoreHold", "HOLDERS_FILE"]

HOLDERS_FILE = "holders.lock"


class StoreHold:
    """A shared hold on one store directory, for as long as the backend is open."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd: int | None = None
        if fcntl is None:  # pragma: no cover
            return
        fd = os.open(directory / HOLDERS_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreInUse("the store is being re-embedded by another process; open it again when that finishes", path=directory) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    @contextlib.contextmanager
    def exclusive(self, what: str) -> Iterator[None]:
        """Hold the store alone for `what`, or `StoreInUse` at once if another holder has it open."""
        if fcntl is None or self._fd is None:  # pragma: no cover
            yield
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(self._fd, fcntl.LOCK_SH)  # a failed conversion may have dropped the shared lock
            raise StoreInUse(
                f"cannot {what}: another process has this store open (a running service, MCP server or CLI); "
                "stop it first, or re-embed into a new store with --into", path=self.directory,
            ) from None
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_SH)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor releases the lock
