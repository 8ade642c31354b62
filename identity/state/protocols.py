"""Identity state behind protocols: sessions, API keys, nonces.

Why: the rules (who may continue a session, whether a key verifies, whether a request is a
replay) must not care where the state lives. Today there are in-memory and SQLite
implementations; a PostgreSQL one for several replicas plugs in behind the same protocols.

An implementation stores; it never decides. It keeps exactly the *integrity* guarantees listed
on each protocol (the ones that must hold under concurrency, because only the store can make
them atomic), and nothing else: the fingerprint comparison, the hash check, revocation policy
and window arithmetic live in `identity.sessions`, `identity.providers.api_keys` and
`identity.providers.gateway`.

Implementations raise only members of the error tree: `Unavailable` (retryable: a held lock, an
unreachable database, a full nonce cache) or `CorruptStorage`/`ConfigurationError` naming the
store — never a driver's raw exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "ApiKeyRecord",
    "ApiKeyRepository",
    "NonceCache",
    "SessionBinding",
    "SessionRepository",
    "StoredApiKey",
]


# --------------------------------------------------------------------------- sessions
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
class SessionRepository(Protocol):
    """Stored session bindings, keyed by `(tenant_id, session_id)`.

    Integrity rule — **bind once**: `bind_if_absent` atomically inserts the binding unless one
    exists for its key, and returns whichever binding is stored afterwards. Two callers racing
    (threads, processes, replicas) on one key all get the same winner back. A stored binding is
    never changed or deleted by this interface.
    """

    def bind_if_absent(self, binding: SessionBinding) -> SessionBinding: ...

    def get(self, tenant_id: str, session_id: str) -> SessionBinding | None: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- API keys
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
    last_used_at: float | None = None  # when a request last presented it (recorded at most once a minute per process)

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@dataclass(frozen=True)
class StoredApiKey:
    """A record plus its verifier (`scheme`, `salt`, `digest`); the plaintext is never stored."""

    record: ApiKeyRecord
    scheme: str
    salt: bytes
    digest: bytes


@runtime_checkable
class ApiKeyRepository(Protocol):
    """Stored API keys, keyed by `key_id`.

    Integrity rules: `insert` refuses a `key_id` that exists (raises `Conflict`), so a key is
    never silently replaced; `revoke` sets `revoked_at` once and it is never cleared (True only
    for the call that revoked an active key); `lookup` returns the verifier and the record in
    one read, so a key revoked concurrently is seen revoked or not, never half.
    """

    def insert(self, key: StoredApiKey) -> None: ...

    def lookup(self, key_id: str) -> StoredApiKey | None: ...

    async def lookup_async(self, key_id: str) -> StoredApiKey | None:
        """`lookup` for a caller on an event loop (the service's door): a repository over the
        network awaits its read instead of blocking the loop; a local one may answer inline."""
        ...

    def revoke(self, key_id: str, at: float) -> bool: ...

    def touch(self, key_id: str, at: float) -> None:
        """Record that the key was presented at `at` (for `keys list`; never changes what it grants)."""
        ...

    def records(self, tenant_id: str | None = None) -> Sequence[ApiKeyRecord]: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- nonces
@runtime_checkable
class NonceCache(Protocol):
    """Nonces seen inside a replay window; the second use of a live nonce is refused.

    Integrity rule — **atomic check-and-insert**: `check_and_remember(nonce, expires_at)` returns
    True and remembers `nonce` until `expires_at` if no live (unexpired) entry for it exists,
    and False otherwise, as one atomic step: of any number of concurrent calls with one nonce
    (threads, processes sharing the store, replicas), at most one gets True while it is live.
    An expired entry may be forgotten at any time. When the cache cannot remember another live
    nonce (full, unreachable) it raises a retryable `Unavailable` — it never forgets a live
    nonce to make room, which would let that request be replayed.
    """

    def check_and_remember(self, nonce: str, expires_at: float) -> bool: ...

    async def check_and_remember_async(self, nonce: str, expires_at: float) -> bool:
        """`check_and_remember` for a caller on an event loop (the gateway provider in the
        service's door): a cache that writes to disk or over the network does it without
        blocking the loop; the same atomic step."""
        ...
