"""Replay caches for gateway nonces: in-memory (one process) and SQLite (processes sharing a file).

Both implement `identity.state.protocols.NonceCache`: atomic check-and-insert, expiry, and a hard cap
that fails closed. Why the cap fails closed: a cache that evicts a *live* nonce to make room
has just made that request replayable; refusing new requests (retryable `NonceCacheFull`,
HTTP 503) until entries expire is the only safe answer to a flood.

In-memory cost (the cost must not grow with the number of live nonces, or a flood slows every
request; an earlier cache rebuilt its whole dict under the lock on
every call above 1,024 entries): each call does one dict lookup and one append; expired
entries are found through per-second buckets visited once each, so every entry is inspected a
bounded number of times over its life — O(1) amortised per call, independent of how many
nonces are live. `work` counts the entries and buckets inspected, so tests can prove it. The
price of buckets: an expired entry lingers until its second is over, and counts towards the
cap until then (so the cap may refuse up to one second's arrivals early — failing closed, the
safe direction).

What it must never do: forget a live nonce, or answer True twice for one live nonce.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from identity.errors import InvalidInput, NonceCacheFull
from identity.storage.migrations import open_identity_store
from identity.storage.sqlite import storage_error

__all__ = ["DEFAULT_MAX_NONCES", "InMemoryNonceCache", "SqliteNonceCache"]

#: About 80 MB of live nonces at most in one process; ~750 signed requests/s sustained with the
#: default 330 s window. Raise it for busier gateways, or share a SQLite/PostgreSQL cache.
DEFAULT_MAX_NONCES = 250_000
_MAX_NONCE_LENGTH = 256


def checked_nonce(nonce: object, expires_at: object) -> tuple[str, float]:
    """`(nonce, expires_at)` validated (every cache, in any store, refuses the same inputs)."""
    if not isinstance(nonce, str) or not nonce or len(nonce) > _MAX_NONCE_LENGTH:
        raise InvalidInput(f"a nonce is a non-empty string of at most {_MAX_NONCE_LENGTH} characters")
    if not nonce.isascii() and not _encodable(nonce):
        raise InvalidInput("a nonce must be valid unicode text (no lone surrogates)")
    # an int is compared, never converted: math.isfinite(10**5000) overflows
    if isinstance(expires_at, bool) or not isinstance(expires_at, (int, float)) or (
        isinstance(expires_at, float) and not math.isfinite(expires_at)
    ) or not -2**62 < expires_at < 2**62:
        raise InvalidInput("a nonce's expires_at is a finite number of unix seconds")
    return nonce, float(expires_at)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class InMemoryNonceCache:
    """Process-local replay cache. Several replicas need a shared one (`SqliteNonceCache`, or a
    PostgreSQL implementation of the same protocol)."""

    def __init__(self, clock: Callable[[], float] = time.time, *, max_entries: int = DEFAULT_MAX_NONCES) -> None:
        if max_entries < 1:
            raise InvalidInput("max_entries must be at least 1")
        self._clock = clock
        self._max = max_entries
        self._live: dict[str, float] = {}
        self._buckets: dict[int, list[str]] = {}  # floor(expires_at) -> nonces (some maybe re-inserted later)
        self._swept: int | None = None  # every bucket below this second has been purged
        self._lock = threading.Lock()
        #: Entries and buckets inspected so far (for complexity tests; never reset by the cache).
        self.work = 0

    def __len__(self) -> int:
        return len(self._live)

    async def check_and_remember_async(self, nonce: str, expires_at: float) -> bool:
        return self.check_and_remember(nonce, expires_at)  # in memory: nothing to wait for

    def check_and_remember(self, nonce: str, expires_at: float) -> bool:
        nonce, expires_at = checked_nonce(nonce, expires_at)
        now = self._clock()
        with self._lock:
            self._sweep(now)
            self.work += 1
            known = self._live.get(nonce)
            if known is not None and known > now:
                return False
            if expires_at <= now:
                return True  # dead on arrival: nothing inside its window left to protect
            if known is None and len(self._live) >= self._max:
                raise NonceCacheFull(
                    f"gateway replay cache is full ({self._max} live nonces); retry when some expire",
                    retry_after=self._seconds_to_first_expiry(now),
                )
            self._live[nonce] = expires_at
            swept = self._swept if self._swept is not None else math.floor(now)  # set by _sweep
            self._buckets.setdefault(max(math.floor(expires_at), swept), []).append(nonce)
            return True

    def _sweep(self, now: float) -> None:
        limit = math.floor(now)  # bucket k < limit holds expiries < k + 1 <= now: all expired
        if self._swept is None:
            self._swept = limit
            return
        if limit <= self._swept:
            return
        gap = limit - self._swept
        if gap <= len(self._buckets):
            keys: list[int] | range = range(self._swept, limit)
            self.work += gap
        else:  # idle for longer than there are buckets: visit the buckets, not the seconds
            keys = sorted(k for k in self._buckets if k < limit)
            self.work += len(self._buckets)
        for key in keys:
            for nonce in self._buckets.pop(key, ()):
                self.work += 1
                expiry = self._live.get(nonce)
                if expiry is not None and expiry <= now:  # a re-inserted nonce lives in a later bucket
                    del self._live[nonce]
        self._swept = limit

    def _seconds_to_first_expiry(self, now: float) -> float:
        first = min(self._buckets, default=math.floor(now))
        return max(1.0, first + 1 - now)


#: Migration 1: nonces keyed by value with their expiry; a one-row counter keeps the cap O(1).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE nonces (nonce TEXT PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;
    CREATE INDEX nonces_by_expiry ON nonces (expires_at);
    CREATE TABLE nonce_count (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL);
    INSERT INTO nonce_count (one, n) VALUES (1, 0);
    """,
)


class SqliteNonceCache:
    """Replay cache in a SQLite file that several processes on one host may share: the check
    and the insert run in one `BEGIN IMMEDIATE` transaction, so two processes refuse each
    other's replays. Each call also deletes up to `purge_batch` expired rows, so the table holds
    at most the live nonces plus one batch. A locked or damaged file raises a typed error
    (`StorageUnavailable`, `CorruptStorage`): the request fails closed, it is never let through.
    """

    def __init__(
        self,
        path: str | Path,
        clock: Callable[[], float] = time.time,
        *,
        max_entries: int | None = None,
        purge_batch: int = 64,
    ) -> None:
        if max_entries is not None and max_entries < 1:
            raise InvalidInput("max_entries must be at least 1 (or None for no cap)")
        if purge_batch < 1:
            raise InvalidInput("purge_batch must be at least 1")
        self.path = Path(path)
        self._clock = clock
        self._max = max_entries
        self._batch = purge_batch
        self._db = open_identity_store(self.path, "nonces", MIGRATIONS, "nonce cache")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT n FROM nonce_count").fetchone()[0])

    async def check_and_remember_async(self, nonce: str, expires_at: float) -> bool:
        """In a worker thread: the transaction commits with a sync to disk, and waits up to the
        busy timeout while another process holds the file's write lock; neither may stall an
        event loop. The connection is shared under `_lock`, so any thread may run it."""
        return await asyncio.to_thread(self.check_and_remember, nonce, expires_at)

    def check_and_remember(self, nonce: str, expires_at: float) -> bool:
        nonce, expires_at = checked_nonce(nonce, expires_at)
        now = self._clock()
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    result = self._check_and_remember(db, nonce, expires_at, now)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "nonce cache") from None
        if isinstance(result, NonceCacheFull):
            raise result
        return result

    def _check_and_remember(
        self, db: sqlite3.Connection, nonce: str, expires_at: float, now: float
    ) -> bool | NonceCacheFull:
        purged = db.execute(
            "DELETE FROM nonces WHERE nonce IN"
            " (SELECT nonce FROM nonces WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)",
            (now, self._batch),
        ).rowcount
        if purged:
            db.execute("UPDATE nonce_count SET n = n - ?", (purged,))
        row = db.execute("SELECT expires_at FROM nonces WHERE nonce = ?", (nonce,)).fetchone()
        if row is not None and row[0] > now:
            return False
        if expires_at <= now:
            return True
        if row is not None:  # an expired entry for the same nonce: reuse its row
            db.execute("UPDATE nonces SET expires_at = ? WHERE nonce = ?", (expires_at, nonce))
            return True
        if self._max is not None:
            (count,) = db.execute("SELECT n FROM nonce_count").fetchone()
            if count >= self._max:
                (first,) = db.execute("SELECT MIN(expires_at) FROM nonces").fetchone()
                return NonceCacheFull(
                    f"gateway replay cache {self.path} is full ({self._max} live nonces); retry when some expire",
                    retry_after=max(1.0, (first or now) - now),
                )
        db.execute("INSERT INTO nonces (nonce, expires_at) VALUES (?, ?)", (nonce, expires_at))
        db.execute("UPDATE nonce_count SET n = n + 1")
        return True
