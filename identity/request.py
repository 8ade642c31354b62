"""One call for the request path: credential -> identity -> requested session -> session binding.

Why: the HTTP service, the CLI and the sync facade all need the same three steps in the same
order, and getting the order wrong (binding before narrowing, or narrowing from a body) is how
identity leaks happen. Note what is *not* a parameter: the request body, metadata, messages.
The only request-chosen value is `session_id`, passed explicitly by the caller.
"""

from __future__ import annotations

from identity.model import MemoryIdentity
from identity.providers.base import Credential, IdentityProvider, narrow
from identity.sessions import SessionRegistry

__all__ = ["establish_identity"]


async def establish_identity(
    provider: IdentityProvider,
    credential: Credential,
    *,
    session_id: str | None = None,
    sessions: SessionRegistry | None = None,
) -> MemoryIdentity:
    """Authenticate, narrow to the requested session (if any), and bind/continue it.

    Raises what the provider raises (`Unauthenticated`, ...), `Forbidden` for an invalid session
    id, and `SessionIdentityMismatch` when the session belongs to another identity.
    """
    identity = await provider.authenticate(credential)
    if session_id is not None:
        identity = narrow(identity, {"session_id": session_id})
    if sessions is not None:
        identity = await sessions.continue_session_async(identity)
    return identity
