"""JWKS fetching: cached, refreshed once on an unknown kid, rotation handled, no refetch storm,
fail closed when the key source is down."""

from __future__ import annotations

import asyncio

import pytest

from identity.errors import IdentityProviderUnavailable, InvalidCredential
from identity.providers import BearerToken, JwksCache, JwtProvider
from tests.identity.idtestkit import AUDIENCE, ISSUER, JWKS_URL


def _provider(server, clock, **cache_kwargs) -> tuple[JwtProvider, JwksCache]:
    cache = JwksCache(JWKS_URL, server.client(), clock=clock, **cache_kwargs)
    return JwtProvider(keys=cache, issuer=ISSUER, audience=AUDIENCE), cache


async def test_keys_fetched_once_and_cached(jwks_server, clock, rsa_key, ec_key):
    provider, _ = _provider(jwks_server, clock)
    for _ in range(5):
        await provider.authenticate(BearerToken(rsa_key.mint()))
        await provider.authenticate(BearerToken(ec_key.mint()))
    assert jwks_server.hits == 1


async def test_unknown_kid_triggers_one_refresh_and_accepts_rotated_key(jwks_server, clock, rsa_key, rsa_key_2):
    provider, _ = _provider(jwks_server, clock, min_refresh_interval=60)
    await provider.authenticate(BearerToken(rsa_key.mint()))
    assert jwks_server.hits == 1
    clock.advance(61)
    jwks_server.keys.append(rsa_key_2.jwk())  # the IdP publishes its next key and starts using it
    identity = await provider.authenticate(BearerToken(rsa_key_2.mint(sub="u2")))
    assert identity.user_id == "u2"
    assert jwks_server.hits == 2


async def test_retired_key_rejected_after_cache_expires(jwks_server, clock, rsa_key, rsa_key_2):
    provider, _ = _provider(jwks_server, clock, min_refresh_interval=60, max_age=600)
    await provider.authenticate(BearerToken(rsa_key.mint()))
    jwks_server.keys = [rsa_key_2.jwk()]  # rsa-1 retired
    clock.advance(601)
    with pytest.raises(InvalidCredential, match=r"unknown signing key \(kid='rsa-1'\)"):
        await provider.authenticate(BearerToken(rsa_key.mint()))
    assert (await provider.authenticate(BearerToken(rsa_key_2.mint()))).user_id == "u17"


async def test_unknown_kids_never_cause_a_refetch_storm(jwks_server, clock, rsa_key_2):
    provider, _ = _provider(jwks_server, clock, min_refresh_interval=60)
    for i in range(50):
        with pytest.raises(InvalidCredential, match="unknown signing key"):
            await provider.authenticate(BearerToken(rsa_key_2.mint(headers={"kid": f"random-{i}"})))
    # one initial fetch; the unknown-kid refresh is rate-limited to once per interval
    assert jwks_server.hits == 1
    clock.advance(60)
    with pytest.raises(InvalidCredential):
        await provider.authenticate(BearerToken(rsa_key_2.mint(headers={"kid": "random-x"})))
    assert jwks_server.hits == 2


async def test_concurrent_unknown_kid_misses_share_one_fetch(jwks_server, clock, rsa_key, rsa_key_2):
    provider, _ = _provider(jwks_server, clock, min_refresh_interval=60)
    await provider.authenticate(BearerToken(rsa_key.mint()))
    clock.advance(120)
    jwks_server.keys.append(rsa_key_2.jwk())
    tokens = [BearerToken(rsa_key_2.mint(sub=f"u{i}")) for i in range(20)]
    identities = await asyncio.gather(*(provider.authenticate(t) for t in tokens))
    assert {i.user_id for i in identities} == {f"u{i}" for i in range(20)}
    assert jwks_server.hits == 2


async def test_jwks_down_at_start_fails_closed(jwks_server, clock, rsa_key):
    jwks_server.status = 503
    provider, _ = _provider(jwks_server, clock)
    with pytest.raises(IdentityProviderUnavailable, match="no signing keys available"):
        await provider.authenticate(BearerToken(rsa_key.mint()))


async def test_jwks_down_later_keeps_cached_keys(jwks_server, clock, rsa_key):
    provider, _ = _provider(jwks_server, clock, max_age=600)
    await provider.authenticate(BearerToken(rsa_key.mint()))
    jwks_server.status = 500
    clock.advance(601)
    assert (await provider.authenticate(BearerToken(rsa_key.mint()))).user_id == "u17"
    assert jwks_server.hits == 2


async def test_symmetric_and_mislabelled_jwks_entries_are_skipped(jwks_server, clock, rsa_key):
    jwks_server.keys = [
        {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQ", "kid": "rsa-1", "alg": "HS256"},
        rsa_key.jwk(kid="enc-key", use="enc"),
        rsa_key.jwk(),
    ]
    provider, cache = _provider(jwks_server, clock)
    assert (await provider.authenticate(BearerToken(rsa_key.mint()))).user_id == "u17"
    assert [k.kid for k in await cache.candidates()] == ["rsa-1"]


async def test_cached_keys_are_refused_once_refresh_has_failed_for_too_long(jwks_server, clock, rsa_key):
    """Review finding: a JWKS endpoint that stays down must not make old keys valid forever."""
    provider, _ = _provider(jwks_server, clock, min_refresh_interval=60, max_age=600, max_stale=3600)
    await provider.authenticate(BearerToken(rsa_key.mint()))
    jwks_server.status = 503
    clock.advance(601)  # refresh fails, cached keys still serve within max_stale
    assert (await provider.authenticate(BearerToken(rsa_key.mint()))).user_id == "u17"
    clock.advance(3600)
    with pytest.raises(IdentityProviderUnavailable, match="refusing stale keys"):
        await provider.authenticate(BearerToken(rsa_key.mint()))
