"""Session binding: a session id belongs to the identity that first used it, forever.

Why (seed 003, leakage test 6: "session fork/continue must not change the authenticated user
identity"): a session id is chosen by the request (`narrow`), so without a binding anyone who
learns a session id could continue it — and read the session-scoped context — as themselves.
The registry binds `(tenant_id, session_id)` to the identity's `fingerprint` on first use;
continuing it with any other fingerprint raises `SessionIdentityMismatch`. A fork gets a fresh
id, the same fingerprint, and remembers its parent; forking someone else's session is refused.

Session ids are namespaced per tenant: `s1` in tenant `acme` and `s1` in tenant `globex` are
unrelated. The fingerprint covers every access-deciding field (user, agent, departments,
workspace, roles, permission_version), so a role change also ends the right to continue old
sessions — fail closed; start a new one.

This module never widens an identity: every method returns the caller's own identity, at most
with a different session id.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from identity.errors import SessionIdentityMismatch, UnknownSession
from identity.ids import validate_id
from identity.model import MemoryIdentity
from identity.providers.base import new_session_id
from identity.storage import open_identity_store

__all__ = [
    "InMemorySessionRegistry",
    "SessionBinding",
    "SessionRegistry",
    "SqliteSessionRegistry",
]


@dataclass(frozen=True)
class SessionBinding:
    """Who a session belongs to. `user_id`/`agent_id` are kept for audit; `fingerprint` decides."""

    tenant_id: str
    session_id: str
    fingerprint: str
    user_id: str
    agent_id: str
    parent_session_id: str | None
    created_at: float


@runtime_checkable
class SessionRegistry(Protocol):
    def continue_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        """Bind `identity.session_id` on first use; refuse if bound to another fingerprint."""
        ...

    def start_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        """A fresh session id bound to `identity`."""
        ...

    def fork(self, identity: MemoryIdentity, parent_session_id: str) -> MemoryIdentity:
        """A new session inheriting `identity`, recording `parent_session_id` (which must be its own)."""
        ...

    def binding(self, tenant_id: str, session_id: str) -> SessionBinding | None: ...


class _RegistryBase:
    """The rules; subclasses only store and fetch bindings atomically.

    A binding never changes once stored, so the fingerprints this process has already seen
    stored are remembered: continuing a known session costs a dict lookup, not a database
    round trip (and a mismatch is still refused from the same cache).
    """

    _CONFIRMED_MAX = 100_000
    _confirmed: dict[tuple[str, str], str]

    def _bind_if_absent(self, binding: SessionBinding) -> SessionBinding:  # pragma: no cover
        """Insert `binding` unless `(tenant, session)` exists; return whichever is now stored."""
        raise NotImplementedError

    def binding(self, tenant_id: str, session_id: str) -> SessionBinding | None:  # pragma: no cover
        raise NotImplementedError

    def _new_binding(self, identity: MemoryIdentity, session_id: str, parent: str | None) -> SessionBinding:
        return SessionBinding(
            tenant_id=identity.tenant_id,
            session_id=session_id,
            fingerprint=identity.fingerprint,
            user_id=identity.user_id,
            agent_id=identity.agent_id,
            parent_session_id=parent,
            created_at=time.time(),
        )

    def continue_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        confirmed = self.__dict__.setdefault("_confirmed", {})
        key = (identity.tenant_id, identity.session_id)
        known = confirmed.get(key)
        if known is not None:
            if known != identity.fingerprint:
                raise _mismatch("continue", identity.tenant_id, identity.session_id)
            return identity
        stored = self._bind_if_absent(self._new_binding(identity, identity.session_id, None))
        _require_owner(stored, identity, "continue")
        if len(confirmed) >= self._CONFIRMED_MAX:
            confirmed.clear()
        confirmed[key] = stored.fingerprint
        return identity

    def start_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        return self.continue_session(identity.with_session(new_session_id()))

    def fork(self, identity: MemoryIdentity, parent_session_id: str) -> MemoryIdentity:
        validate_id(parent_session_id, "parent_session_id")
        parent = self.binding(identity.tenant_id, parent_session_id)
        if parent is None:
            raise UnknownSession(
                f"cannot fork session {parent_session_id!r} in tenant {identity.tenant_id!r}: it was never started"
            )
        _require_owner(parent, identity, "fork")
        child_id = new_session_id()
        stored = self._bind_if_absent(self._new_binding(identity, child_id, parent_session_id))
        _require_owner(stored, identity, "fork")  # a uuid4 collision would land here, not leak
        return identity.with_session(child_id)


def _mismatch(action: str, tenant_id: str, session_id: str) -> SessionIdentityMismatch:
    # Do not say whose session it is.
    return SessionIdentityMismatch(
        f"cannot {action} session {session_id!r} in tenant {tenant_id!r}: it is bound to a different identity"
    )


def _require_owner(stored: SessionBinding, identity: MemoryIdentity, action: str) -> None:
    if stored.fingerprint != identity.fingerprint:
        raise _mismatch(action, stored.tenant_id, stored.session_id)


class InMemorySessionRegistry(_RegistryBase):
    """For tests and single-process development; forgets everything on exit."""

    def __init__(self) -> None:
        self._bindings: dict[tuple[str, str], SessionBinding] = {}
        self._lock = threading.Lock()

    def _bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        with self._lock:
            return self._bindings.setdefault((binding.tenant_id, binding.session_id), binding)

    def binding(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        with self._lock:
            return self._bindings.get((tenant_id, session_id))


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


class SqliteSessionRegistry(_RegistryBase):
    """Bindings persisted in SQLite (WAL, synchronous=FULL): a restart never frees a session id.

    First-use binding is `INSERT OR IGNORE` + read-back, so two processes racing to bind the
    same id agree on one winner; the loser gets `SessionIdentityMismatch`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_identity_store(self.path, "session_bindings", MIGRATIONS, "session registry")
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def _bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO session_bindings"
                " (tenant_id, session_id, fingerprint, user_id, agent_id, parent_session_id, created_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (
                    binding.tenant_id, binding.session_id, binding.fingerprint, binding.user_id,
                    binding.agent_id, binding.parent_session_id, binding.created_at,
                ),
            )
            stored = self._get(binding.tenant_id, binding.session_id)
        assert stored is not None
        return stored

    def binding(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        with self._lock:
            return self._get(tenant_id, session_id)

    def _get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        row = self._db.execute(
            "SELECT tenant_id, session_id, fingerprint, user_id, agent_id, parent_session_id, created_at"
            " FROM session_bindings WHERE tenant_id = ? AND session_id = ?",
            (tenant_id, session_id),
        ).fetchone()
        return SessionBinding(*row) if row else None
