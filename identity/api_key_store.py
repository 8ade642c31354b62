"""Where API keys live: `ApiKeyRepository` implementations (in-memory, SQLite).

They keep the integrity rules of `identity.state.ApiKeyRepository` — a key id is never reused
or replaced, a revocation is final — and decide nothing else: hashing, verification and what
a revoked key means are `identity.providers.api_keys`' job. Only verifiers (salt + HMAC digest)
are stored, never a plaintext key.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from pathlib import Path

from identity.errors import Conflict, CorruptStorage
from identity.state import ApiKeyRecord, StoredApiKey
from identity.migrations import open_identity_store
from identity.storage import storage_error

__all__ = ["InMemoryApiKeyRepository", "MIGRATIONS", "SqliteApiKeyRepository"]


class InMemoryApiKeyRepository:
    """For tests and embedded use; forgets every key on exit."""

    def __init__(self) -> None:
        self._keys: dict[str, StoredApiKey] = {}
        self._lock = threading.Lock()

    def insert(self, key: StoredApiKey) -> None:
        with self._lock:
            if key.record.key_id in self._keys:
                raise Conflict(f"API key id {key.record.key_id} already exists")
            self._keys[key.record.key_id] = key

    def lookup(self, key_id: str) -> StoredApiKey | None:
        with self._lock:
            return self._keys.get(key_id)

    def revoke(self, key_id: str, at: float) -> bool:
        with self._lock:
            stored = self._keys.get(key_id)
            if stored is None or stored.record.revoked:
                return False
            record = dataclasses.replace(stored.record, revoked_at=at)
            self._keys[key_id] = dataclasses.replace(stored, record=record)
            return True

    def records(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        with self._lock:
            found = [k.record for k in self._keys.values() if tenant_id is None or k.record.tenant_id == tenant_id]
        return sorted(found, key=lambda r: r.created_at)

    def close(self) -> None:
        return None


#: Migration 1 is the table as it was before migrations existed (`IF NOT EXISTS` adopts old files).
MIGRATIONS: tuple[str, ...] = (
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
)

_COLUMNS = (
    "key_id, tenant_id, user_id, department_ids, workspace_id, agent_id, roles,"
    " permission_version, label, created_at, revoked_at"
)


def _record(row: tuple, path: Path) -> ApiKeyRecord:
    try:
        return _decode(row)
    except (ValueError, TypeError) as exc:  # a row edited by hand into something else
        raise CorruptStorage(f"API key store at {path} holds an unreadable row ({type(exc).__name__})", path=str(path)) from None


def _decode(row: tuple) -> ApiKeyRecord:
    (key_id, tenant, user, departments, workspace, agent, roles, version, label, created, revoked) = row
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
    )


class SqliteApiKeyRepository:
    """API keys in a SQLite file (WAL, synchronous=FULL, 0600), one connection behind a lock."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_identity_store(self.path, "api_keys", MIGRATIONS, "API key store")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
            row = self._run(f"SELECT scheme, salt, digest, {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
        if row is None:
            return None
        scheme, salt, digest, *rest = row
        return StoredApiKey(record=_record(tuple(rest), self.path), scheme=scheme, salt=bytes(salt), digest=bytes(digest))

    def revoke(self, key_id: str, at: float) -> bool:
        with self._lock:
            cur = self._run("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (at, key_id))
        return cur.rowcount == 1

    def records(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        query = f"SELECT {_COLUMNS} FROM api_keys"
        args: tuple[str, ...] = ()
        if tenant_id is not None:
            query += " WHERE tenant_id = ?"
            args = (tenant_id,)
        with self._lock:
            rows = self._run(query + " ORDER BY created_at", args).fetchall()
        return [_record(r, self.path) for r in rows]
