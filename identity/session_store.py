"""Where session bindings live: `SessionRepository` implementations (in-memory, SQLite).

They keep one integrity rule, **bind once** (see `identity.state.SessionRepository`), and make
no decision: whether a presented identity may continue a session is `identity.sessions`' job.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from identity.errors import CorruptStorage
from identity.state import SessionBinding
from identity.migrations import open_identity_store
from identity.storage import storage_error

__all__ = ["InMemorySessionRepository", "MIGRATIONS", "SqliteSessionRepository"]


class InMemorySessionRepository:
    """For tests and single-process development; forgets everything on exit."""

    def __init__(self) -> None:
        self._bindings: dict[tuple[str, str], SessionBinding] = {}
        self._lock = threading.Lock()

    def bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        with self._lock:
            return self._bindings.setdefault((binding.tenant_id, binding.session_id), binding)

    def get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        with self._lock:
            return self._bindings.get((tenant_id, session_id))

    def close(self) -> None:
        return None


#: Migration 1 is the table as it was before migrations existed (`IF NOT EXISTS` adopts old files).
MIGRATIONS: tuple[str, ...] = (
    """
CREATE TABLE IF NOT EXISTS session_bindings (
    tenant_id         TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    fingerprint       TEXT NOT NULL,
    user_id           TEXT NOT NULL,
    agent_id          TEXT NOT NULL,
    parent_session_id TEXT,
    created_at        REAL NOT NULL,
    PRIMARY KEY (tenant_id, session_id)
)
""",
)

_COLUMNS = "tenant_id, session_id, fingerprint, user_id, agent_id, parent_session_id, created_at"


class SqliteSessionRepository:
    """Bindings persisted in SQLite (WAL, synchronous=FULL): a restart never frees a session id.

    Bind-once is `INSERT OR IGNORE` + read-back, so two processes racing to bind the same id
    agree on one winner.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_identity_store(self.path, "session_bindings", MIGRATIONS, "session registry")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        with self._lock:
            try:
                self._db.execute(
                    f"INSERT OR IGNORE INTO session_bindings ({_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                    (
                        binding.tenant_id, binding.session_id, binding.fingerprint, binding.user_id,
                        binding.agent_id, binding.parent_session_id, binding.created_at,
                    ),
                )
                stored = self._get(binding.tenant_id, binding.session_id)
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "session registry") from None
        if stored is None:  # the row we just inserted (or lost to) vanished: the file is not ours
            raise CorruptStorage(f"session registry at {self.path} lost a binding it just stored", path=str(self.path))
        return stored

    def get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        with self._lock:
            try:
                return self._get(tenant_id, session_id)
            except sqlite3.Error as exc:
                raise storage_error(exc, self.path, "session registry") from None

    def _get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM session_bindings WHERE tenant_id = ? AND session_id = ?",
            (tenant_id, session_id),
        ).fetchone()
        return SessionBinding(*row) if row else None
