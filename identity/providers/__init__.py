"""Identity providers: credential in, `MemoryIdentity` out (see `base` for the contract)."""

from identity.providers.api_keys import ApiKeyProvider, ApiKeyRecord, ApiKeyStore, IssuedApiKey
from identity.providers.base import (
    NARROWABLE_FIELDS,
    ApiKey,
    BearerToken,
    Credential,
    DevEnvironment,
    GatewayRequest,
    IdentityProvider,
    narrow,
    new_session_id,
)
from identity.providers.dev import DevEnvironmentProvider
from identity.providers.gateway import GatewayProvider, NonceCache, canonical_string, sign_gateway_headers
from identity.providers.jwks import JwksCache, StaticKeys, VerificationKey
from identity.providers.jwt import ClaimMapping, JwtProvider

__all__ = [
    "NARROWABLE_FIELDS",
    "ApiKey",
    "ApiKeyProvider",
    "ApiKeyRecord",
    "ApiKeyStore",
    "BearerToken",
    "ClaimMapping",
    "Credential",
    "DevEnvironment",
    "DevEnvironmentProvider",
    "GatewayProvider",
    "GatewayRequest",
    "IdentityProvider",
    "IssuedApiKey",
    "JwksCache",
    "JwtProvider",
    "NonceCache",
    "StaticKeys",
    "VerificationKey",
    "canonical_string",
    "narrow",
    "new_session_id",
    "sign_gateway_headers",
]
