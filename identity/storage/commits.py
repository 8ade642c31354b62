"""Has any connection committed to a SQLite file since this process last looked? Asked without
a system call.

Why: what a process keeps from a SQLite file must be dropped as soon as any connection commits
a change to it. The local store checks before every search that no other process changed it
(`PRAGMA data_version`, adapters/local/store.py), so a memory another process forgot, edited or
moved is never answered from this process's partitions; the API key store keeps each key's row
the same way (identity/state/sqlite.py), and a change number is read again only when the stamp
moved (identity/storage/changes.py). Any read opens a read transaction: three
system calls (a read lock on the `-shm` file, a stat of the database file, the unlock), ~5 us in
a tight loop and ~20 us between two searches' matrix products, a tenth of a warm local search.
It lives in `identity`, beside `connect_durable`, so every package's SQLite store can use it.

How: in WAL mode every commit publishes itself by rewriting the WAL-index header at the start of
the `-shm` file (https://www.sqlite.org/walformat.html): `iChange` grows by one with every
transaction, and a log restart after a checkpoint changes the salts. SQLite writes the header's
two copies one after the other, and its readers trust the header only when both copies agree; so
does `stamp`. Two agreeing copies equal byte for byte to those read before the last full check
mean no transaction has been published since, by any connection: the full check is skipped.
Anything else runs it, as before: the copies differ (a commit is being published), the header is
not one this code knows (another version number, not initialised), or there is no `-shm` file to
read (not WAL mode).

What it must never do: call the store unchanged while a published commit is unseen. The caller
reads the stamp BEFORE the full check it records it with, so a commit landing between the two is
seen by that check or changes the next stamp. Nor close a descriptor of the `-shm` file while a
connection of this process uses it: that drops SQLite's own locks there (`CommitWatch` says why).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
import threading
from pathlib import Path
from typing import Generic, Hashable, Protocol, TypeVar

__all__ = ["CommitWatch", "KeptUntilChange", "header_stamp"]


class Closable(Protocol):
    """What `CommitWatch.close_with` closes first: the owner's connection to the database."""

    def close(self) -> None: ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: one copy of the WAL-index header (WalIndexHdr); the file starts with two
HEADER_BYTES = 48
#: `iVersion`, the first field of the header: the WAL-index format this code reads
WAL_INDEX_VERSION = 3007000
_IS_INIT = 12  # the byte offset of `isInit`, 1 once the header is valid


def header_stamp(two_copies: bytes) -> bytes | None:
    """The header as a stamp when both copies agree and are a header of the known format;
    None when the header cannot be trusted now (the caller then runs the full check)."""
    first = two_copies[:HEADER_BYTES]
    if len(first) != HEADER_BYTES or first != two_copies[HEADER_BYTES : 2 * HEADER_BYTES]:
        return None
    if int.from_bytes(first[:4], sys.byteorder) != WAL_INDEX_VERSION or first[_IS_INIT] != 1:
        return None
    return first


class _SharedView:
    """One read-only mapping of a `-shm` file's header, shared by every CommitWatch of this
    process on that file (its inode), with the descriptors it holds open until the last watch
    closes. Every change to it is made under `_VIEWS_LOCK`."""

    __slots__ = ("fds", "key", "map", "watchers")

    def __init__(self, key: tuple[int, int], fd: int) -> None:
        self.key = key
        self.fds = [fd]
        self.map: mmap.mmap | None = None
        self.watchers = 0
        self.try_to_map()

    def try_to_map(self) -> None:
        """Map the header once the file holds one (a file SQLite has just created may not yet)."""
        if self.map is None and os.fstat(self.fds[0]).st_size >= 2 * HEADER_BYTES:
            try:
                self.map = mmap.mmap(self.fds[0], 2 * HEADER_BYTES, access=mmap.ACCESS_READ)
            except (OSError, ValueError):
                self.map = None


#: (device, inode) of a `-shm` file -> the one view of it this process holds open. Re-entrant:
#: a watch dropped without `close()` closes in `__del__`, which the garbage collector may run on a
#: thread that holds the lock already (inside another watch's `__init__`).
_VIEWS: dict[tuple[int, int], _SharedView] = {}
_VIEWS_LOCK = threading.RLock()


class CommitWatch:
    """A read-only view of the store's WAL-index header. `stamp()` is None whenever the header
    cannot say (no `-shm` file, a header being written, an unknown format): never a guess.

    Why the views are shared and held open: SQLite locks the `-shm` file with POSIX advisory
    locks (among them the one that tells a process opening the database that others use the
    WAL index), and closing ANY descriptor of a file drops every POSIX lock the process holds on
    it, SQLite's included (fcntl(2)). A watch that opened the file and closed its descriptor at
    once left its process without those locks: the next process to open the database believed
    itself the first, truncated the `-shm` file and rebuilt the WAL index under the first
    process's feet (a child pytest session died of SIGBUS). So a descriptor is opened once per
    file per process, never closed while a watch of it is open, and an owner closes its own
    connection to the database first (`close_with`)."""

    __slots__ = ("_view",)

    def __init__(self, db_file: Path) -> None:
        self._view: _SharedView | None = None
        shm = f"{db_file}-shm"
        with _VIEWS_LOCK:
            try:
                found = os.stat(shm)
            except OSError:  # not WAL mode, or not yet read: every check runs in full
                return
            view = _VIEWS.get((found.st_dev, found.st_ino))
            if view is None:  # only then a descriptor is opened: it is closed by the view's last watch
                try:
                    fd = os.open(shm, os.O_RDONLY)
                except OSError:
                    return
                opened = os.fstat(fd)
                key = (opened.st_dev, opened.st_ino)  # the file may have been replaced since the stat
                view = _VIEWS.get(key)
                if view is None:
                    view = _VIEWS[key] = _SharedView(key, fd)
                else:  # opened twice after all: the second descriptor lives as long as the first
                    view.fds.append(fd)
            view.watchers += 1
            self._view = view

    def stamp(self) -> bytes | None:
        view = self._view
        if view is None:
            return None
        if view.map is None:  # not mapped yet: the file may hold its header by now
            with _VIEWS_LOCK:
                view.try_to_map()
            if view.map is None:
                return None
        return header_stamp(view.map[: 2 * HEADER_BYTES])

    def close(self) -> None:
        """Stop watching; the last watch of a file closes its view. Call it after the owner's
        own connection to the database is closed (`close_with` does both, in that order)."""
        view, self._view = self._view, None
        if view is None:
            return
        with _VIEWS_LOCK:
            view.watchers -= 1
            if view.watchers > 0 or _VIEWS.get(view.key) is not view:
                return
            del _VIEWS[view.key]
            if view.map is not None:
                view.map.close()
            for fd in view.fds:
                os.close(fd)

    def close_with(self, connection: Closable) -> None:
        """Close the owner's `connection` to the database, then this watch: the one order that
        never drops SQLite's locks under a live connection of this process."""
        try:
            connection.close()
        finally:
            self.close()

    def __del__(self) -> None:  # an owner dropped without closing: its connection is going too
        with contextlib.suppress(Exception):
            self.close()


class KeptUntilChange(Generic[K, V]):
    """What was read for a key, served again only under the same token: a commit stamp (nothing
    committed to the file since) or a change number (nothing written to the tables it counts,
    identity/storage/changes.py), read BEFORE what is kept under it. At most `size` keys (then
    all are dropped together). A None token keeps and serves nothing."""

    __slots__ = ("_kept", "_size")

    def __init__(self, size: int) -> None:
        self._kept: dict[K, tuple[Hashable, V]] = {}
        self._size = size

    def get(self, key: K, token: Hashable | None) -> V | None:
        kept = self._kept.get(key) if token is not None else None
        return kept[1] if kept is not None and kept[0] == token else None

    def put(self, key: K, token: Hashable | None, value: V) -> None:
        if token is None:
            return
        if len(self._kept) >= self._size:
            self._kept.clear()
        self._kept[key] = (token, value)
