"""Identity state in SQLite files: session bindings and API keys (one process or several
sharing a file on one machine).

They keep the integrity rules of `identity.state.protocols`: **bind once** for sessions (two
processes racing to bind one id agree on one winner), and for API keys a key id is never reused
or replaced and a revocation is final. They decide nothing else: whether a presented identity
may continue a session is `identity.sessions`' job; hashing, verification and what a revoked
key means are `identity.providers.api_keys`'. Only verifiers (salt + HMAC digest) are stored,
never a plaintext key. Every driver failure leaves as a member of the error tree
(`identity.storage.sqlite.storage_error`), never a raw `sqlite3` exception.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from identity.errors import Conflict, CorruptStorage
from identity.state.protocols import ApiKeyRecord, SessionBinding, StoredApiKey
from identity.storage.commits import CommitWatch, KeptUntilChange
from identity.storage.migrations import open_identity_store
from identity.storage.sqlite import storage_error

__all__ = ["API_KEY_MIGRATIONS", "SESSION_MIGRATIONS", "SqliteApiKeyRepository", "SqliteSessionRepository"]


#: Migration 1 is the table as it was before migrations existed (`IF NOT EXISTS` adopts old files).
SESSION_MIGRATIONS: tuple[str, ...] = (
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

_SESSION_COLUMNS = "tenant_id, session_id, fingerprint, user_id, agent_id, parent_session_id, created_at"


class SqliteSessionRepository:
    """Bindings persisted in SQLite (WAL, synchronous=FULL): a restart never frees a session id.

    Bind-once is `INSERT OR IGNORE` + read-back, so two processes racing to bind the same id
    agree on one winner.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_identity_store(self.path, "session_bindings", SESSION_MIGRATIONS, "session registry")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        with self._lock:
            try:
                self._db.execute(
                    f"INSERT OR IGNORE INTO session_bindings ({_SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
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
            f"SELECT {_SESSION_COLUMNS} FROM session_bindings WHERE tenant_id = ? AND session_id = ?",
            (tenant_id, session_id),
        ).fetchone()
        return SessionBinding(*row) if row else None


#: Migration 1 is the table as it was before migrations existed (`IF NOT EXISTS` adopts old files).
API_KEY_MIGRATIONS: tuple[str, ...] = (
    """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id             TEXT PRIMARY KEY,
    scheme             TEXT NOT NULL,
    salt               BLOB NOT NULL,
    digest             BLOB NOT NULL,
    tenant_id          TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    department_ids     TEXT NOT NULL,   -- JSON list
    workspace_id       TEXT,
    agent_id           TEXT NOT NULL,
    roles              TEXT NOT NULL,   -- JSON list
    permission_version TEXT,
    label              TEXT NOT NULL DEFAULT '',
    created_at         REAL NOT NULL,
    revoked_at         REAL
)
""",
    # when each key was last presented: a table of its own, so recording a use never rewrites
    # the key's row (and the migration is idempotent for a file adopted without versions)
    "CREATE TABLE IF NOT EXISTS api_key_uses (key_id TEXT PRIMARY KEY, last_used_at REAL NOT NULL)",
)

_API_KEY_COLUMNS = (
    "key_id, tenant_id, user_id, department_ids, workspace_id, agent_id, roles,"
    " permission_version, label, created_at, revoked_at,"
    " (SELECT last_used_at FROM api_key_uses u WHERE u.key_id = api_keys.key_id)"
)
#: the hot path's statement: one constant text (the driver's statement cache is keyed by it)
_LOOKUP = f"SELECT scheme, salt, digest, {_API_KEY_COLUMNS} FROM api_keys WHERE key_id = ?"
#: decoded rows kept by `SqliteApiKeyRepository.lookup` (cleared when full)
_DECODED_MAX = 4096


def _record(row: tuple, path: Path) -> ApiKeyRecord:
    try:
        return _decode(row)
    except (ValueError, TypeError) as exc:  # a row edited by hand into something else
        raise CorruptStorage(f"API key store at {path} holds an unreadable row ({type(exc).__name__})", path=str(path)) from None


def _decode(row: tuple) -> ApiKeyRecord:
    (key_id, tenant, user, departments, workspace, agent, roles, version, label, created, revoked, used) = row
    return ApiKeyRecord(
        key_id=key_id,
        tenant_id=tenant,
        user_id=user,
        department_ids=frozenset(json.loads(departments)),
        workspace_id=workspace,
        agent_id=agent,
        roles=frozenset(json.loads(roles)),
        permission_version=version,
        label=label,
        created_at=created,
        revoked_at=revoked,
        last_used_at=used,
    )


class SqliteApiKeyRepository:
    """API keys in a SQLite file (WAL, synchronous=FULL, 0600), one connection behind a lock.

    `lookup` answers from what it last read for a key only while no connection, of this process
    or another, has committed anything to the file since (the file's commit stamp,
    identity/storage/commits.py), so a revocation by any process is seen on the next request;
    otherwise it reads the key's row (a read transaction: three system calls) and keeps what
    decoding a row gives, keyed on the whole row as read: decoding (two JSON lists, two frozen
    records) was a third of the lookup's CPU on the service's hot path, and it is a pure
    function of the row. A row that changed in any column (revoked, re-bound, re-used) is another
    key, decoded afresh. An unknown key id is read every time (nothing kept for it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_identity_store(self.path, "api_keys", API_KEY_MIGRATIONS, "API key store")
        self._lock = threading.Lock()
        self._decoded: dict[tuple, StoredApiKey] = {}
        self._commits = CommitWatch(self.path)  # the store is open and migrated: its -shm file exists
        self._looked_up: KeptUntilChange[str, StoredApiKey] = KeptUntilChange(_DECODED_MAX)  # key id -> key, per stamp

    def close(self) -> None:
        with self._lock:
            self._commits.close_with(self._db)

    def _run(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, "API key store") from None

    def insert(self, key: StoredApiKey) -> None:
        r = key.record
        with self._lock:
            try:
                self._run(
                    "INSERT INTO api_keys (key_id, scheme, salt, digest, tenant_id, user_id, department_ids,"
                    " workspace_id, agent_id, roles, permission_version, label, created_at, revoked_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        r.key_id, key.scheme, key.salt, key.digest, r.tenant_id, r.user_id,
                        json.dumps(sorted(r.department_ids)), r.workspace_id, r.agent_id, json.dumps(sorted(r.roles)),
                        r.permission_version, r.label, r.created_at, r.revoked_at,
                    ),
                )
            except sqlite3.IntegrityError:
                raise Conflict(f"API key id {r.key_id} already exists") from None

    def lookup(self, key_id: str) -> StoredApiKey | None:
        with self._lock:
            stamp = self._commits.stamp()  # before the read it vouches for: a commit in between changes the next one
            if (kept := self._looked_up.get(key_id, stamp)) is not None:
                return kept
            row = self._run(_LOOKUP, (key_id,)).fetchone()
            if row is None:
                return None
            known = self._decoded.get(row)
            if known is None:
                scheme, salt, digest, *rest = row
                known = StoredApiKey(record=_record(tuple(rest), self.path), scheme=scheme, salt=bytes(salt), digest=bytes(digest))
                if len(self._decoded) >= _DECODED_MAX:
                    self._decoded.clear()
                self._decoded[row] = known
            self._looked_up.put(key_id, stamp, known)
        return known

    async def lookup_async(self, key_id: str) -> StoredApiKey | None:
        """Inline: from memory while nothing was committed, else one indexed read of a local WAL
        file, which no writer blocks (~10 us); a worker thread would cost more than the read."""
        return self.lookup(key_id)

    def revoke(self, key_id: str, at: float) -> bool:
        with self._lock:
            cur = self._run("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (at, key_id))
        return cur.rowcount == 1

    def touch(self, key_id: str, at: float) -> None:
        with self._lock:
            self._run(
                "INSERT INTO api_key_uses (key_id, last_used_at) VALUES (?, ?)"
                " ON CONFLICT (key_id) DO UPDATE SET last_used_at = max(last_used_at, excluded.last_used_at)", (key_id, at),
            )

    def records(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        query = f"SELECT {_API_KEY_COLUMNS} FROM api_keys"
        args: tuple[str, ...] = ()
        if tenant_id is not None:
            query += " WHERE api_keys.tenant_id = ?"
            args = (tenant_id,)
        with self._lock:
            rows = self._run(query + " ORDER BY created_at", args).fetchall()
        return [_record(r, self.path) for r in rows]
