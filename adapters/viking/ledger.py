"""The Viking adapter's write ledger: what makes a retried write idempotent AT THE SERVICE.

Why it exists. Viking's `event/add` answers with an id the service makes
(`data.event_id`); it accepts no client-chosen id and has no upsert for events, and a new event
becomes searchable only after a lag. So when the answer of an add is lost (a timeout, a 5xx
after the commit) the adapter cannot tell whether it landed, and looking it up by our memory id
(`group_id`) finds nothing while the copy is still invisible: the retry stores a second physical
copy. Reads collapse copies, but they cost quota and erasure must find every one.

What it records, per (collection, principal, group id) — our memory id, derived from (scope,
idempotency key), so the row is "idempotency key -> memory id" without storing the key:

- before an add is sent: a `pending` row holding the exact call (memory_info, time, assistant),
  so every later attempt, in this call or a caller's retry, sends the SAME record;
- an answer with an event id: `done` + that event id, the copy that wins;
- an ambiguous failure (the service may have applied it): `uncertain` + 1 and the time.

`VikingBackend.reconcile_writes` takes the rows whose last ambiguity is older than the service's
search lag bound, looks up every copy of that memory (same principal, same group id), deletes
every copy but the winner (adopting one copy when no add was ever acknowledged; dropping
the row when none landed), and clears the mark. It runs a few rows at the start of every put and
on demand. The ledger also lets a put or `find_by_idempotency_key` answer "it landed" for a write
that was acknowledged but is not yet searchable.

Durable: one small SQLite file in the adapter's state dir (`identity.storage.sqlite.connect_durable`:
WAL, synchronous=FULL), created 0600; without a state dir it lives in memory (one process).
It never decides who may see what and holds no memory content beyond the record it sent.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from adapters.errors import BackendMisconfigured, BackendUnavailable
from identity.storage.sqlite import connect_durable

__all__ = ["WriteLedger", "LedgerRow", "LEDGER_FILE"]

LEDGER_FILE = "viking-write-ledger.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS viking_writes (
    collection   TEXT NOT NULL,
    principal    TEXT NOT NULL,
    group_id     TEXT NOT NULL,
    call         TEXT NOT NULL,            -- JSON: the exact event/add arguments sent
    event_id     TEXT,                     -- the copy that wins (first acknowledged add)
    uncertain    INTEGER NOT NULL DEFAULT 0,  -- ambiguous attempts not reconciled yet
    touched_at   REAL NOT NULL,            -- last add attempt or answer (adapter clock)
    PRIMARY KEY (collection, principal, group_id)
);
CREATE INDEX IF NOT EXISTS viking_writes_due ON viking_writes (uncertain, touched_at);
CREATE TABLE IF NOT EXISTS viking_meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class LedgerRow:
    collection: str
    principal: str
    group_id: str
    call: dict[str, Any]
    event_id: str | None
    uncertain: int
    touched_at: float


class WriteLedger:
    """The ledger table. Every method is one short statement (safe to call on the event loop)."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None) -> None:
        self.path: Path | None = None
        try:
            if state_dir is None:
                self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            else:
                self.path = Path(state_dir) / LEDGER_FILE
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                if not self.path.exists():
                    os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))  # -wal/-shm inherit 0600
                self._db = connect_durable(self.path)
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise BackendMisconfigured(f"the Viking write ledger at {self.path or ':memory:'} cannot be opened: {type(exc).__name__}: {exc}", backend="viking") from None

    def __repr__(self) -> str:
        return f"WriteLedger({str(self.path) if self.path else ':memory:'})"

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:  # a held lock, a full disk: retryable
            raise BackendUnavailable(f"the Viking write ledger is unavailable: {exc}", backend="viking") from None
        except sqlite3.Error as exc:
            raise BackendMisconfigured(f"the Viking write ledger at {self.path} failed: {type(exc).__name__}: {exc}", backend="viking") from None

    def hold(self, collection: str, principal: str, group_id: str) -> AbstractAsyncContextManager[None]:
        """Nothing to hold: one process uses this file, and the adapter's own lock serialises it
        (the PostgreSQL ledger holds a lock every replica sees)."""
        return nullcontext()

    def secret(self, name: str) -> bytes:
        """A random secret kept in the ledger (the list_page cursor key), made on first use."""
        rows = self._run("SELECT value FROM viking_meta WHERE name = ?", (name,))
        if rows:
            return bytes(rows[0][0])
        self._run("INSERT OR IGNORE INTO viking_meta (name, value) VALUES (?, ?)", (name, secrets.token_bytes(32)))
        return bytes(self._run("SELECT value FROM viking_meta WHERE name = ?", (name,))[0][0])

    @staticmethod
    def _row(r: tuple[Any, ...]) -> LedgerRow:
        return LedgerRow(r[0], r[1], r[2], json.loads(r[3]), r[4], int(r[5]), float(r[6]))

    def get(self, collection: str, principal: str, group_id: str) -> LedgerRow | None:
        rows = self._run(
            "SELECT collection, principal, group_id, call, event_id, uncertain, touched_at FROM viking_writes"
            " WHERE collection = ? AND principal = ? AND group_id = ?",
            (collection, principal, group_id),
        )
        return self._row(rows[0]) if rows else None

    def begin(self, collection: str, principal: str, group_id: str, call: Mapping[str, Any], now: float) -> LedgerRow:
        """Record the call before it is sent; an existing row (an earlier attempt) wins."""
        self._run(
            "INSERT OR IGNORE INTO viking_writes (collection, principal, group_id, call, touched_at) VALUES (?, ?, ?, ?, ?)",
            (collection, principal, group_id, json.dumps(dict(call), sort_keys=True), now),
        )
        row = self.get(collection, principal, group_id)
        assert row is not None
        return row

    def uncertain(self, collection: str, principal: str, group_id: str, now: float) -> None:
        self._run(
            "UPDATE viking_writes SET uncertain = uncertain + 1, touched_at = ? WHERE collection = ? AND principal = ? AND group_id = ?",
            (now, collection, principal, group_id),
        )

    def won(self, collection: str, principal: str, group_id: str, event_id: str, now: float) -> None:
        """An add was acknowledged with `event_id`. The first acknowledged copy wins; a later,
        different one is itself a copy to remove (counted as uncertain)."""
        self._run(
            "UPDATE viking_writes SET"
            " uncertain = uncertain + (CASE WHEN event_id IS NOT NULL AND event_id != ? THEN 1 ELSE 0 END),"
            " event_id = COALESCE(event_id, ?), touched_at = ?"
            " WHERE collection = ? AND principal = ? AND group_id = ?",
            (event_id, event_id, now, collection, principal, group_id),
        )

    def settle(self, collection: str, principal: str, group_id: str, event_id: str) -> None:
        self._run(
            "UPDATE viking_writes SET event_id = ?, uncertain = 0 WHERE collection = ? AND principal = ? AND group_id = ?",
            (event_id, collection, principal, group_id),
        )

    def forget(self, collection: str, principal: str, group_id: str | None = None) -> None:
        """Drop a row (the memory was deleted, or no copy ever landed); every row of the
        principal when `group_id` is None."""
        if group_id is None:
            self._run("DELETE FROM viking_writes WHERE collection = ? AND principal = ?", (collection, principal))
        else:
            self._run("DELETE FROM viking_writes WHERE collection = ? AND principal = ? AND group_id = ?", (collection, principal, group_id))

    def due(self, settled_before: float, limit: int) -> list[LedgerRow]:
        """Rows with an ambiguity older than `settled_before` (every copy is searchable by now):
        marked uncertain, or never answered at all (the process died mid-call)."""
        rows = self._run(
            "SELECT collection, principal, group_id, call, event_id, uncertain, touched_at FROM viking_writes"
            " WHERE (uncertain > 0 OR event_id IS NULL) AND touched_at <= ? ORDER BY touched_at LIMIT ?",
            (settled_before, max(1, limit)),
        )
        return [self._row(r) for r in rows]

    def pending_count(self) -> int:
        """Rows `reconcile` still has to look at (uncertain, or never answered)."""
        return int(self._run("SELECT COUNT(*) FROM viking_writes WHERE uncertain > 0 OR event_id IS NULL")[0][0])

    def close(self) -> None:
        self._db.close()
