"""Who is asking: `MemoryIdentity`, the id grammar, identity providers and session binding."""

from identity.errors import (
    ExpiredCredential,
    Forbidden,
    IdentityConfigurationError,
    IdentityError,
    InvalidCredential,
    SessionIdentityMismatch,
    Unauthenticated,
)
from identity.ids import InvalidIdError, validate_id
from identity.model import MemoryIdentity

__all__ = [
    "ExpiredCredential",
    "Forbidden",
    "IdentityConfigurationError",
    "IdentityError",
    "InvalidCredential",
    "InvalidIdError",
    "MemoryIdentity",
    "SessionIdentityMismatch",
    "Unauthenticated",
    "validate_id",
]
