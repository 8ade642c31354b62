"""The issuer is matched exactly (a prefix or substring match would accept a look-alike issuer's tokens; CVE-2024-53861 made PyJWT 2.10.0 match a
substring): substrings, superstrings, look-alike prefixes and list-valued `iss` are refused."""

from __future__ import annotations

import json
import time

import jwt
import pytest

from identity.errors import InvalidCredential
from identity.providers import BearerToken, JwksCache, JwtProvider
from identity.providers.jwt import MIN_PYJWT, _version_tuple
from tests.identity.idtestkit import AUDIENCE, ISSUER, JWKS_URL

REFUSED_ISSUERS = [
    ISSUER[:-1],                      # "https://idp.example.test" — a substring (the CVE's case)
    "https://idp.example",            # a shorter prefix
    "idp.example.test",               # a substring from the middle
    "",                               # the empty string is a substring of everything
    "/",
    ISSUER + "evil",                  # a superstring
    "https://idp.example.test.evil/",
    ISSUER.upper(),
    [ISSUER],                         # an array holding the right issuer
    [ISSUER, "https://other/"],
    {"iss": ISSUER},
    None,
    42,
]


def _mint_raw(key, **claims) -> str:
    """Sign any JSON payload (PyJWT's `encode` refuses a non-string `iss`; an attacker's IdP would not)."""
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u17", "tid": "acme", "azp": "coder", "iat": now, "exp": now + 300}
    payload.update(claims)
    return jwt.api_jws.encode(json.dumps(payload).encode(), key.private, algorithm=key.alg, headers={"kid": key.kid})


@pytest.fixture
def provider(jwks_server, clock):
    cache = JwksCache(JWKS_URL, jwks_server.client(), min_refresh_interval=60, clock=clock)
    return JwtProvider(keys=cache, issuer=ISSUER, audience=AUDIENCE, leeway=10)


@pytest.mark.parametrize("iss", REFUSED_ISSUERS, ids=repr)
async def test_token_from_a_lookalike_issuer_cannot_authenticate(provider, rsa_key, iss):
    with pytest.raises(InvalidCredential):
        await provider.authenticate(BearerToken(_mint_raw(rsa_key, iss=iss)))


@pytest.mark.parametrize("iss", REFUSED_ISSUERS, ids=repr)
async def test_lookalike_issuer_refused_when_several_issuers_are_configured(jwks_server, clock, rsa_key, iss):
    cache = JwksCache(JWKS_URL, jwks_server.client(), min_refresh_interval=60, clock=clock)
    provider = JwtProvider(keys=cache, issuer=[ISSUER, "https://login.example.org/v2.0"], audience=AUDIENCE)
    with pytest.raises(InvalidCredential):
        await provider.authenticate(BearerToken(_mint_raw(rsa_key, iss=iss)))


async def test_exact_issuer_still_accepted(provider, rsa_key):
    assert (await provider.authenticate(BearerToken(rsa_key.mint()))).user_id == "u17"


async def test_substring_issuer_refused_even_if_the_library_let_it_through(provider, rsa_key, monkeypatch):
    """Our own exact check holds even with a PyJWT that skips (or botches) the issuer check."""
    real_decode = jwt.decode

    def vulnerable_decode(token, key, **kwargs):
        kwargs.pop("issuer", None)
        return real_decode(token, key, **kwargs)

    monkeypatch.setattr(jwt, "decode", vulnerable_decode)
    with pytest.raises(InvalidCredential, match="issuer"):
        await provider.authenticate(BearerToken(rsa_key.mint(iss=ISSUER[:-1])))


def test_installed_pyjwt_is_not_the_vulnerable_release():
    assert _version_tuple(jwt.__version__) >= MIN_PYJWT == (2, 10, 1)
    assert _version_tuple("2.10.0") < MIN_PYJWT and _version_tuple("2.10.1rc1") >= (2, 10, 1)
