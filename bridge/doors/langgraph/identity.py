"""Who is asking, for one store call: a fixed identity, or the LangGraph run's authenticated user.

    FixedIdentity(identity)          a `MemoryIdentity` the application verified itself (one
                                     store per user/session, e.g. a script or a per-request store)
    AuthUserIdentity(provider)       LangGraph's auth context: the platform's `@auth.authenticate`
                                     handler returns the caller's raw credential in the user dict
                                     (field `bridge_credential` by default); the store reads it
                                     from `config["configurable"]["langgraph_auth_user"]` (the
                                     run's config, `langgraph.config.get_config()`) and verifies it
                                     with one of the bridge's identity providers (JWT, API key)

Never: the namespace, the item value, `langgraph_user_id` or the auth user's `identity` string
on its own — those are request data. Without a verifiable credential the call is refused
(`StoreIdentityMissing`), never served under a default identity. A client that smuggles its own
`langgraph_auth_user` into `configurable` gains nothing: only a credential the bridge verifies
names anyone, and its own credential names only itself.

The session is the LangGraph thread: `thread_id` (hashed into the id grammar) becomes the
identity's session id (`narrow`, the one field a request may choose), so one run's calls share
one session binding instead of minting one per call, and a thread first used by one identity is
refused to every other (`SessionIdentityMismatch`). Without a thread id each call gets the
provider's fresh session.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, Mapping, Protocol

from bridge.doors.langgraph.errors import StoreIdentityMissing
from identity.model import MemoryIdentity
from identity.providers import ApiKey, BearerToken, IdentityProvider, narrow

__all__ = ["IdentitySource", "FixedIdentity", "AuthUserIdentity", "run_config"]


class IdentitySource(Protocol):
    async def identity(self) -> MemoryIdentity: ...


class FixedIdentity:
    """The identity given at construction; it must already be a verified `MemoryIdentity`."""

    def __init__(self, identity: MemoryIdentity) -> None:
        if not isinstance(identity, MemoryIdentity):
            raise StoreIdentityMissing("FixedIdentity needs a MemoryIdentity built by an identity provider")
        self._identity = identity

    async def identity(self) -> MemoryIdentity:
        return self._identity


def run_config() -> Mapping[str, Any]:
    """The current LangGraph run's config, or {} outside a run."""
    try:
        from langgraph.config import get_config

        return get_config() or {}
    except RuntimeError:  # called outside a runnable context
        return {}


def _field(user: Any, name: str) -> Any:
    if isinstance(user, Mapping):
        return user.get(name)
    try:
        return user[name]  # langgraph_sdk's auth users are dict-like
    except (KeyError, TypeError, IndexError):
        return getattr(user, name, None)


class AuthUserIdentity:
    """The run's `langgraph_auth_user`, mapped through a credential the bridge verifies itself."""

    def __init__(
        self, provider: IdentityProvider, *, field: str = "bridge_credential", kind: Literal["bearer", "api_key"] = "bearer",
        session_from_thread: bool = True,
    ) -> None:
        self.provider, self.field, self.kind, self.session_from_thread = provider, field, kind, session_from_thread

    async def identity(self) -> MemoryIdentity:
        configurable = run_config().get("configurable") or {}
        user = configurable.get("langgraph_auth_user")
        if user is None:
            raise StoreIdentityMissing("no langgraph_auth_user in the run's config: the store serves authenticated runs only")
        credential = _field(user, self.field)
        if not isinstance(credential, str) or not credential:
            raise StoreIdentityMissing(f"the authenticated LangGraph user carries no {self.field!r} credential for the bridge to verify")
        wrapped = BearerToken(credential) if self.kind == "bearer" else ApiKey(credential)
        verified = await self.provider.authenticate(wrapped)
        thread = configurable.get("thread_id")
        if self.session_from_thread and thread is not None:
            digest = hashlib.sha256(f"langgraph-thread|{thread}".encode()).hexdigest()[:40]
            verified = narrow(verified, {"session_id": "lg" + digest})
        return verified
