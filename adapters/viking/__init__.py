"""Hosted Viking Memory behind the bridge: client, auth, scope mapping and the backend adapter.

Adapters never decide who may see what; see `adapters.viking.backend` for how a ScopeSet becomes
a Viking filter and how every hit is checked against it again.
"""

from adapters.viking.auth import ApiKeyAuth, SignerV4Auth
from adapters.viking.backend import VikingBackend, VikingConfig
from adapters.viking.client import RetryPolicy, VikingMemoryClient
from adapters.viking.errors import (
    VikingCollectionMissing,
    VikingError,
    VikingInvalidRequest,
    VikingNotFound,
    VikingNotSent,
    VikingPermissionDenied,
    VikingRateLimited,
    VikingRetryLater,
    VikingUnavailable,
)

__all__ = [
    "ApiKeyAuth",
    "SignerV4Auth",
    "VikingBackend",
    "VikingConfig",
    "RetryPolicy",
    "VikingMemoryClient",
    "VikingError",
    "VikingCollectionMissing",
    "VikingInvalidRequest",
    "VikingNotFound",
    "VikingNotSent",
    "VikingPermissionDenied",
    "VikingRateLimited",
    "VikingRetryLater",
    "VikingUnavailable",
]
