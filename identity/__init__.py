"""Who is asking: `MemoryIdentity`, the id grammar, identity providers and session binding.

    credential (BearerToken | ApiKey | GatewayRequest | DevEnvironment)
      -> IdentityProvider.authenticate ...... MemoryIdentity (from the credential only)
      -> narrow(identity, {"session_id": s})  the one thing a request may choose
      -> SessionRegistry.continue_session ... the session stays with its first identity

`establish_identity` does the three steps in order; `identity.settings.build_provider` builds
the configured provider. See docs/identity.md.
"""

from identity.errors import (
    ExpiredCredential,
    Forbidden,
    IdentityConfigurationError,
    IdentityError,
    IdentityProviderUnavailable,
    InvalidCredential,
    InvalidIdentityInput,
    NonceCacheFull,
    SessionIdentityMismatch,
    Unauthenticated,
    UnknownSession,
)
from identity.ids import InvalidIdError, validate_id
from identity.model import MemoryIdentity
from identity.providers import (
    ApiKey,
    ApiKeyProvider,
    ApiKeyStore,
    BearerToken,
    ClaimMapping,
    Credential,
    DevEnvironment,
    DevEnvironmentProvider,
    GatewayProvider,
    GatewayRequest,
    IdentityProvider,
    JwksCache,
    JwtProvider,
    StaticKeys,
    VerificationKey,
    narrow,
)
from identity.state.nonces import InMemoryNonceCache, SqliteNonceCache
from identity.request import establish_identity
from identity.sessions import (
    InMemorySessionRegistry,
    SessionBinder,
    SessionBinding,
    SessionRegistry,
    SqliteSessionRegistry,
)
from identity.state.protocols import ApiKeyRepository, NonceCache, SessionRepository

__all__ = [
    "ApiKey",
    "ApiKeyProvider",
    "ApiKeyRepository",
    "ApiKeyStore",
    "BearerToken",
    "ClaimMapping",
    "Credential",
    "DevEnvironment",
    "DevEnvironmentProvider",
    "ExpiredCredential",
    "Forbidden",
    "GatewayProvider",
    "GatewayRequest",
    "IdentityConfigurationError",
    "IdentityError",
    "IdentityProvider",
    "IdentityProviderUnavailable",
    "InMemoryNonceCache",
    "InMemorySessionRegistry",
    "InvalidCredential",
    "InvalidIdError",
    "InvalidIdentityInput",
    "JwksCache",
    "JwtProvider",
    "MemoryIdentity",
    "NonceCache",
    "NonceCacheFull",
    "SessionBinder",
    "SessionBinding",
    "SessionIdentityMismatch",
    "SessionRegistry",
    "SessionRepository",
    "SqliteNonceCache",
    "SqliteSessionRegistry",
    "StaticKeys",
    "Unauthenticated",
    "UnknownSession",
    "VerificationKey",
    "establish_identity",
    "narrow",
    "validate_id",
]
