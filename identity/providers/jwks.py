"""Verification keys for the JWT provider: static keys, a JWKS fetched over HTTP, and the pinning
of algorithms to key types.

Why pin per key: the classic JOSE attacks pick the algorithm from the token header — `none`, or
`HS256` with the RSA *public* key as the HMAC secret. Here a key carries the set of algorithms
its type can honestly produce (RSA -> RS*/PS*, P-256 -> ES256, Ed25519 -> EdDSA, ...), narrowed
by the JWK's own `alg` and by configuration; a token whose `alg` is not in its key's set is
refused before any signature check. Symmetric (`oct`) keys are never accepted from a JWKS.

Why the refresh limits: an unknown `kid` legitimately means "the issuer rotated keys", so we
refetch — but an attacker can mint endless random kids, so a refetch happens at most once per
`min_refresh_interval` and concurrent misses share one fetch. This module never decides *who*
a token belongs to; it only answers "which key, and may this algorithm be used with it".
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from cryptography.x509 import load_pem_x509_certificate

from identity.errors import IdentityConfigurationError, IdentityProviderUnavailable, UnusableKey

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "JwksCache",
    "KeySource",
    "StaticKeys",
    "VerificationKey",
]

log = logging.getLogger(__name__)

_RSA_ALGS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_EC_ALGS_BY_CURVE = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512", "secp256k1": "ES256K"}
_EC_CURVE_BY_CRYPTO_NAME = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521", "secp256k1": "secp256k1"}
ASYMMETRIC_ALGORITHMS = frozenset(_RSA_ALGS | set(_EC_ALGS_BY_CURVE.values()) | {"EdDSA"})
"""Every algorithm the JWT provider can ever accept. No `none`, no `HS*`."""


@dataclass(frozen=True)
class VerificationKey:
    """A public key plus the only algorithms a token signed with it may declare."""

    key: Any  # a cryptography public key object
    algorithms: frozenset[str]
    kid: str | None = None

    @classmethod
    def from_public_key(cls, public_key: Any, kid: str | None = None, alg: str | None = None) -> "VerificationKey":
        algorithms = algorithms_for_key(public_key)
        if alg is not None:
            algorithms = algorithms & {alg}
        if not algorithms:
            raise IdentityConfigurationError(
                f"key {kid or '(no kid)'}: algorithm {alg!r} cannot be used with a {type(public_key).__name__}"
            )
        return cls(key=public_key, algorithms=algorithms, kid=kid)

    @classmethod
    def from_pem(cls, pem: str | bytes, kid: str | None = None, alg: str | None = None) -> "VerificationKey":
        """A PEM public key or X.509 certificate. Private keys and shared secrets are refused."""
        data = pem.encode() if isinstance(pem, str) else pem
        try:
            public_key = load_pem_public_key(data)
        except ValueError:
            try:
                public_key = load_pem_x509_certificate(data).public_key()
            except ValueError:
                raise IdentityConfigurationError(
                    "the configured JWT key is not a PEM public key or certificate "
                    "(shared secrets and private keys are refused)"
                ) from None
        return cls.from_public_key(public_key, kid=kid, alg=alg)

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> "VerificationKey":
        """One JWK from a key set; raises `UnusableKey` (a `ValueError`) for anything we will not verify with."""
        kty = jwk.get("kty")
        if kty == "oct":
            raise UnusableKey("symmetric (oct) keys are never accepted for token verification")
        if jwk.get("use") not in (None, "sig"):
            raise UnusableKey(f"key use {jwk.get('use')!r} is not 'sig'")
        alg = jwk.get("alg")
        if alg is not None and alg not in ASYMMETRIC_ALGORITHMS:
            raise UnusableKey(f"key declares algorithm {alg!r}, which is never accepted")
        try:
            parsed = jwt.PyJWK(dict(jwk), algorithm=alg or _default_alg(jwk))
        except jwt.PyJWTError as exc:
            raise UnusableKey(f"unusable JWK: {exc}") from None
        key = parsed.key
        if not _is_public_asymmetric(key):
            raise UnusableKey("JWK is not an asymmetric public key")
        return cls.from_public_key(key, kid=jwk.get("kid"), alg=alg)


def _default_alg(jwk: Mapping[str, Any]) -> str | None:
    if jwk.get("kty") == "RSA":
        return "RS256"
    if jwk.get("kty") == "EC":
        return _EC_ALGS_BY_CURVE.get(str(jwk.get("crv")))
    if jwk.get("kty") == "OKP":
        return "EdDSA"
    return None


def _is_public_asymmetric(key: Any) -> bool:
    return isinstance(
        key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey, ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)
    )


def algorithms_for_key(key: Any) -> frozenset[str]:
    """The algorithms a key of this type can produce. Anything else is a confusion attempt."""
    if isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)):
        raise IdentityConfigurationError("a private key was configured for verification; configure the public key")
    if isinstance(key, rsa.RSAPublicKey):
        return _RSA_ALGS
    if isinstance(key, ec.EllipticCurvePublicKey):
        curve = _EC_CURVE_BY_CRYPTO_NAME.get(key.curve.name)
        return frozenset({_EC_ALGS_BY_CURVE[curve]}) if curve else frozenset()
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return frozenset({"EdDSA"})
    raise IdentityConfigurationError(f"unsupported verification key type {type(key).__name__}")


def parse_jwks(document: Any) -> list[VerificationKey]:
    """Usable keys of a JWKS document; unusable entries are skipped and logged."""
    if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
        raise UnusableKey("JWKS document has no 'keys' list")
    keys: list[VerificationKey] = []
    for entry in document["keys"]:
        if not isinstance(entry, Mapping):
            continue
        try:
            key = VerificationKey.from_jwk(entry)
        except (ValueError, IdentityConfigurationError) as exc:
            log.warning("JWKS: skipping key kid=%r: %s", entry.get("kid"), exc)
            continue
        keys.append(key)
    return keys


class KeySource(Protocol):
    """Where the JWT provider finds the key for a token's `kid`."""

    async def find(self, kid: str | None) -> VerificationKey | None: ...

    async def candidates(self) -> list[VerificationKey]: ...


class StaticKeys(KeySource):
    """Keys fixed in configuration (a PEM public key, a certificate, or JWKs)."""

    def __init__(self, keys: Iterable[VerificationKey]) -> None:
        self._keys = list(keys)
        if not self._keys:
            raise IdentityConfigurationError("no JWT verification key configured")

    async def find(self, kid: str | None) -> VerificationKey | None:
        return _select(self._keys, kid)

    async def candidates(self) -> list[VerificationKey]:
        return list(self._keys)


def _select(keys: list[VerificationKey], kid: str | None) -> VerificationKey | None:
    if kid is not None:
        match = next((k for k in keys if k.kid == kid), None)
        if match is not None:
            return match
    # No kid in the token, or a kid where the one configured key has none (a plain PEM): only
    # unambiguous when exactly one key is known. The algorithm pin and signature still decide.
    if len(keys) == 1 and (kid is None or keys[0].kid is None):
        return keys[0]
    return None


class JwksCache(KeySource):
    """A JWKS fetched with an injected `httpx.AsyncClient`, cached, refreshed on rotation.

    - first use fetches; after `max_age` seconds the next lookup refetches;
    - an unknown kid triggers one refetch, but never more than one per `min_refresh_interval`
      seconds, and concurrent misses wait for the same fetch (no refetch storm);
    - if a refresh fails while keys are cached, the cached keys keep working (logged) for at
      most `max_stale` seconds after the last successful fetch; past that, or with no keys at
      all, `IdentityProviderUnavailable` is raised — a revoked key is never trusted forever.
    """

    def __init__(
        self,
        url: str,
        client: httpx.AsyncClient,
        *,
        min_refresh_interval: float = 60.0,
        max_age: float = 3600.0,
        max_stale: float = 86400.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._max_stale = max(max_stale, max_age)
        self._client = client
        self._min_refresh = min_refresh_interval
        self._max_age = max_age
        self._clock = clock
        self._keys: list[VerificationKey] = []
        self._fetched_at: float | None = None  # last successful fetch
        self._attempted_at: float | None = None  # last attempt, successful or not
        self._lock = asyncio.Lock()
        self.fetch_count = 0

    async def find(self, kid: str | None) -> VerificationKey | None:
        if self._fetched_at is None or self._clock() - self._fetched_at >= self._max_age:
            await self._refresh(reason="initial or expired")
        self._require_keys()
        key = _select(self._keys, kid)
        if key is None:
            await self._refresh(reason=f"unknown kid {kid!r}")
            key = _select(self._keys, kid)
        return key

    async def candidates(self) -> list[VerificationKey]:
        if self._fetched_at is None:
            await self._refresh(reason="initial")
        self._require_keys()
        return list(self._keys)

    def _require_keys(self) -> None:
        if not self._keys:
            raise IdentityProviderUnavailable(f"no signing keys available from the JWKS at {self.url}")
        if self._fetched_at is not None and self._clock() - self._fetched_at > self._max_stale:
            raise IdentityProviderUnavailable(
                f"the JWKS at {self.url} could not be refreshed for over {int(self._max_stale)} s; refusing stale keys"
            )

    async def _refresh(self, *, reason: str) -> None:
        seen_attempt = self._attempted_at
        async with self._lock:
            if self._attempted_at != seen_attempt:
                return  # someone else refreshed while we waited: share their result
            now = self._clock()
            if self._attempted_at is not None and now - self._attempted_at < self._min_refresh:
                return  # rate limit: at most one fetch per interval, whatever the reason
            self._attempted_at = now
            self.fetch_count += 1
            try:
                response = await self._client.get(self.url, headers={"Accept": "application/json"})
                response.raise_for_status()
                keys = parse_jwks(json.loads(response.content))
            except (httpx.HTTPError, ValueError) as exc:
                log.warning("JWKS refresh from %s failed (%s): %s", self.url, reason, exc)
                return  # cached keys (if any) keep working; none at all -> _require_keys raises
            self._keys = keys
            self._fetched_at = now
            log.info("JWKS refreshed from %s (%s): %d keys", self.url, reason, len(keys))
