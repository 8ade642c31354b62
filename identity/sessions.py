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
with a different session id. The rules live here (`SessionBinder`); where bindings are kept is
a `SessionRepository` (`identity.state.memory`, `identity.state.sqlite` or `identity.state.postgres`).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from identity.errors import InvalidIdentityInput, SessionIdentityMismatch, UnknownSession
from identity.ids import validate_id
from identity.model import MemoryIdentity
from identity.providers.base import new_session_id
from identity.state.memory import InMemorySessionRepository
from identity.state.sqlite import SqliteSessionRepository
from identity.state.protocols import SessionBinding, SessionRepository

__all__ = [
    "InMemorySessionRegistry",
    "SessionBinder",
    "SessionBinding",
    "SessionRegistry",
    "SqliteSessionRegistry",
]


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

    async def continue_session_async(self, identity: MemoryIdentity) -> MemoryIdentity:
        """`continue_session` for a caller on an event loop: a binding to store is written
        without blocking the loop."""
        ...

    async def start_session_async(self, identity: MemoryIdentity) -> MemoryIdentity: ...

    async def fork_async(self, identity: MemoryIdentity, parent_session_id: str) -> MemoryIdentity: ...


def _require_identity(identity: object, action: str) -> MemoryIdentity:
    if not isinstance(identity, MemoryIdentity):
        raise InvalidIdentityInput(f"cannot {action} a session for a {type(identity).__name__}; pass a MemoryIdentity")
    return identity


class SessionBinder:
    """The rules over any `SessionRepository` (in memory, SQLite or PostgreSQL).

    A binding never changes once stored, so the fingerprints this process has already seen
    stored are remembered: continuing a known session costs a dict lookup, not a database
    round trip (and a mismatch is still refused from the same cache).
    """

    _CONFIRMED_MAX = 100_000

    def __init__(self, repository: SessionRepository) -> None:
        self.repository = repository
        self._confirmed: dict[tuple[str, str], str] = {}

    def close(self) -> None:
        self.repository.close()

    def binding(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        return self.repository.get(validate_id(tenant_id, "tenant_id"), validate_id(session_id, "session_id"))

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

    def _confirmed_already(self, identity: MemoryIdentity) -> bool:
        """True if this process has seen `identity`'s session stored with its fingerprint;
        `SessionIdentityMismatch` if with another one; False if it must ask the repository."""
        known = self._confirmed.get((identity.tenant_id, identity.session_id))
        if known is None:
            return False
        if known != identity.fingerprint:
            raise _mismatch("continue", identity.tenant_id, identity.session_id)
        return True

    def continue_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        identity = _require_identity(identity, "continue")
        if self._confirmed_already(identity):
            return identity
        stored = self.repository.bind_if_absent(self._new_binding(identity, identity.session_id, None))
        _require_owner(stored, identity, "continue")
        confirmed = self._confirmed
        if len(confirmed) >= self._CONFIRMED_MAX:
            confirmed.clear()
        confirmed[(identity.tenant_id, identity.session_id)] = stored.fingerprint
        return identity

    async def continue_session_async(self, identity: MemoryIdentity) -> MemoryIdentity:
        """A known session is answered on the loop; a first use stores its binding in a worker
        thread: a write that syncs to disk (SQLite, which may also wait for another process's
        lock) or a transaction over the network (PostgreSQL), which would stall every other
        request the loop serves. The repositories are safe to call from any thread."""
        identity = _require_identity(identity, "continue")
        if self._confirmed_already(identity):
            return identity
        return await asyncio.to_thread(self.continue_session, identity)

    def start_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        identity = _require_identity(identity, "start")
        return self.continue_session(identity.with_session(new_session_id()))

    async def start_session_async(self, identity: MemoryIdentity) -> MemoryIdentity:
        identity = _require_identity(identity, "start")
        return await self.continue_session_async(identity.with_session(new_session_id()))

    async def fork_async(self, identity: MemoryIdentity, parent_session_id: str) -> MemoryIdentity:
        """`fork` in a worker thread: it reads the parent's binding and stores the child's."""
        return await asyncio.to_thread(self.fork, identity, parent_session_id)

    def fork(self, identity: MemoryIdentity, parent_session_id: str) -> MemoryIdentity:
        identity = _require_identity(identity, "fork")
        validate_id(parent_session_id, "parent_session_id")
        parent = self.repository.get(identity.tenant_id, parent_session_id)
        if parent is None:
            raise UnknownSession(
                f"cannot fork session {parent_session_id!r} in tenant {identity.tenant_id!r}: it was never started"
            )
        _require_owner(parent, identity, "fork")
        child_id = new_session_id()
        stored = self.repository.bind_if_absent(self._new_binding(identity, child_id, parent_session_id))
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


class InMemorySessionRegistry(SessionBinder):
    """For tests and single-process development; forgets everything on exit."""

    def __init__(self) -> None:
        super().__init__(InMemorySessionRepository())


class SqliteSessionRegistry(SessionBinder):
    """Bindings persisted in SQLite (WAL, synchronous=FULL, file 0600): a restart never frees a
    session id; two processes racing to bind the same id agree on one winner, and the loser
    gets `SessionIdentityMismatch`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        super().__init__(SqliteSessionRepository(self.path))
