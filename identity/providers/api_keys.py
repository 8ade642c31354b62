"""Bridge-issued API keys, each bound to one identity, stored only as salted hashes.

Why: service accounts and agents without an OIDC client still need a credential that names
*who* they are. An admin issues a key for a fixed identity (tenant, user, departments,
workspace, roles, agent); whoever presents the key *is* that identity and cannot choose another.

Key format: `vbk_<key_id>_<secret>` — `key_id` is 16 hex chars (the lookup handle, safe to log),
`secret` is 32 random bytes, url-safe base64. The store keeps `key_id`, a random salt and
HMAC-SHA256(salt, secret); the plaintext key exists only in the return value of `issue`.

Why HMAC-SHA256 and not scrypt: the secret has 256 bits of entropy, so there is nothing for a
slow KDF to protect (slow hashes defend low-entropy passwords) — and a deliberately slow hash on
every request would hand attackers a cheap CPU-exhaustion lever. The `scheme` column allows a
future migration. Comparison uses `hmac.compare_digest`; an unknown key_id costs the same hash.

What it must never do: store or log the plaintext key, or accept a revoked one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from identity.errors import InvalidCredential
from identity.ids import validate_id
from identity.model import MemoryIdentity
from identity.providers.base import ApiKey, new_session_id, require_credential
from identity.storage import open_identity_store

__all__ = ["API_KEY_PREFIX", "ApiKeyProvider", "ApiKeyRecord", "ApiKeyStore", "IssuedApiKey"]

API_KEY_PREFIX = "vbk"
_SCHEME = "hmac-sha256"
_KEY_ID_HEX = 16
_MAX_KEY_LENGTH = 256

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


@dataclass(frozen=True)
class ApiKeyRecord:
    """What the store knows about a key: its binding and status — never the secret."""

    key_id: str
    tenant_id: str
    user_id: str
    department_ids: frozenset[str]
    workspace_id: str | None
    agent_id: str
    roles: frozenset[str]
    permission_version: str | None
    label: str
    created_at: float
    revoked_at: float | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@dataclass(frozen=True)
class IssuedApiKey:
    """Returned once by `issue`. `key` is the only copy of the plaintext; show it, then drop it."""

    key: str = field(repr=False)
    record: ApiKeyRecord


def _digest(salt: bytes, secret: str) -> bytes:
    return hmac.new(salt, secret.encode("utf-8"), hashlib.sha256).digest()


def parse_api_key(key: str) -> tuple[str, str]:
    """Split `vbk_<key_id>_<secret>`; anything else is an `InvalidCredential`."""
    if not isinstance(key, str) or len(key) > _MAX_KEY_LENGTH:
        raise InvalidCredential("malformed API key")
    prefix, _, rest = key.partition("_")
    key_id, _, secret = rest.partition("_")
    if (
        prefix != API_KEY_PREFIX
        or len(key_id) != _KEY_ID_HEX
        or any(c not in "0123456789abcdef" for c in key_id)
        or not secret
    ):
        raise InvalidCredential("malformed API key (expected vbk_<key_id>_<secret>)")
    return key_id, secret


class ApiKeyStore:
    """SQLite store of API keys (WAL, one connection guarded by a lock).

    `issue` and `revoke` are the admin operations (see `python -m identity.admin`); `verify` is
    the hot path used by `ApiKeyProvider`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_identity_store(self.path, "api_keys", MIGRATIONS, "API key store")
        self._lock = threading.Lock()
        self._dummy_salt = secrets.token_bytes(16)

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ admin
    def issue(
        self,
        *,
        tenant_id: str,
        user_id: str,
        agent_id: str,
        department_ids: Iterable[str] = (),
        workspace_id: str | None = None,
        roles: Iterable[str] = (),
        permission_version: str | None = None,
        label: str = "",
    ) -> IssuedApiKey:
        """Create a key bound to this identity. Ids are validated here, at issue time."""
        departments = frozenset(validate_id(d, "department_id") for d in department_ids)
        role_set = frozenset(validate_id(r, "role") for r in roles)
        validate_id(tenant_id, "tenant_id")
        validate_id(user_id, "user_id")
        validate_id(agent_id, "agent_id")
        if workspace_id is not None:
            validate_id(workspace_id, "workspace_id")
        if permission_version is not None:
            validate_id(permission_version, "permission_version")
        key_id = secrets.token_hex(_KEY_ID_HEX // 2)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO api_keys (key_id, scheme, salt, digest, tenant_id, user_id, department_ids,"
                " workspace_id, agent_id, roles, permission_version, label, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    key_id, _SCHEME, salt, _digest(salt, secret), tenant_id, user_id,
                    json.dumps(sorted(departments)), workspace_id, agent_id, json.dumps(sorted(role_set)),
                    permission_version, label, now,
                ),
            )
        record = self.get(key_id)
        assert record is not None
        return IssuedApiKey(key=f"{API_KEY_PREFIX}_{key_id}_{secret}", record=record)

    def revoke(self, key_id: str) -> bool:
        """Revoke a key; True if it existed and was active. Revocation is immediate and final."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (time.time(), key_id)
            )
        return cur.rowcount == 1

    def get(self, key_id: str) -> ApiKeyRecord | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
        return _record(row) if row else None

    def records(self, *, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        query = f"SELECT {_COLUMNS} FROM api_keys"
        args: tuple[str, ...] = ()
        if tenant_id is not None:
            query += " WHERE tenant_id = ?"
            args = (tenant_id,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY created_at", args).fetchall()
        return [_record(r) for r in rows]

    # ------------------------------------------------------------------ hot path
    def verify(self, key: str) -> ApiKeyRecord:
        """The record bound to `key`, or `InvalidCredential` (unknown, wrong secret, revoked)."""
        key_id, secret = parse_api_key(key)
        with self._lock:
            row = self._db.execute(
                "SELECT scheme, salt, digest FROM api_keys WHERE key_id = ?", (key_id,)
            ).fetchone()
        if row is None:
            _digest(self._dummy_salt, secret)  # same work as a real check: no timing oracle
            raise InvalidCredential("unknown API key")
        scheme, salt, digest = row
        if scheme != _SCHEME or not hmac.compare_digest(_digest(salt, secret), digest):
            raise InvalidCredential("unknown API key")  # same message: no oracle for valid key ids
        record = self.get(key_id)
        if record is None or record.revoked:
            raise InvalidCredential(f"API key {key_id} has been revoked")
        return record


_COLUMNS = (
    "key_id, tenant_id, user_id, department_ids, workspace_id, agent_id, roles,"
    " permission_version, label, created_at, revoked_at"
)


def _record(row: tuple) -> ApiKeyRecord:
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


class ApiKeyProvider:
    """`ApiKey` -> the identity its key was issued for, with a fresh session id."""

    def __init__(self, store: ApiKeyStore) -> None:
        self.store = store

    async def authenticate(self, credential: ApiKey) -> MemoryIdentity:
        require_credential(credential, ApiKey, "API key provider")
        record = self.store.verify(credential.key)
        try:
            return MemoryIdentity(
                tenant_id=record.tenant_id,
                user_id=record.user_id,
                department_ids=record.department_ids,
                workspace_id=record.workspace_id,
                agent_id=record.agent_id,
                roles=record.roles,
                permission_version=record.permission_version,
                session_id=new_session_id(),
            )
        except ValueError as exc:  # a row edited by hand into something invalid: fail closed
            raise InvalidCredential(f"API key {record.key_id} is bound to an invalid identity") from exc
