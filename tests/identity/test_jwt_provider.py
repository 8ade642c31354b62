"""JWT / OIDC bearer provider: accepted path, claim mapping, and every way a token must be refused (a bearer token is the identity, so each gap is an impersonation)."""

from __future__ import annotations

import base64
import json
import re
import time

import jwt
import pytest

from identity.errors import ExpiredCredential, IdentityConfigurationError, InvalidCredential, Unauthenticated
from identity.providers import (
    ApiKey,
    BearerToken,
    ClaimMapping,
    JwksCache,
    JwtProvider,
    StaticKeys,
    VerificationKey,
)

from tests.identity.idtestkit import AUDIENCE, ISSUER, JWKS_URL


@pytest.fixture
def provider(jwks_server, clock):
    cache = JwksCache(JWKS_URL, jwks_server.client(), min_refresh_interval=60, clock=clock)
    return JwtProvider(keys=cache, issuer=ISSUER, audience=AUDIENCE, leeway=10)


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


# ------------------------------------------------------------------ accepted
async def test_rsa_token_maps_claims_onto_identity(provider, rsa_key):
    identity = await provider.authenticate(BearerToken(rsa_key.mint()))
    assert identity.tenant_id == "acme"
    assert identity.user_id == "u17"
    assert identity.agent_id == "coder"
    assert identity.department_ids == frozenset({"eng", "ops"})
    assert identity.roles == frozenset({"member"})
    assert identity.workspace_id is None
    assert len(identity.session_id) == 32  # generated: a request picks its session via narrow()


async def test_ec_token_accepted(provider, ec_key):
    identity = await provider.authenticate(BearerToken(ec_key.mint(sub="u18")))
    assert identity.user_id == "u18"


async def test_agent_falls_back_to_client_id_when_no_azp(provider, rsa_key, drop):
    identity = await provider.authenticate(BearerToken(rsa_key.mint(azp=drop, client_id="support-bot")))
    assert identity.agent_id == "support-bot"


async def test_custom_claim_mapping(jwks_server, clock, rsa_key):
    mapping = ClaimMapping(
        tenant_id="org",
        user_id="oid",
        department_ids="https://acme.example/departments",
        workspace_id="project",
        agent_id="appid",
        roles="realm_access.roles",
        permission_version="pv",
    )
    provider = JwtProvider(
        keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock), issuer=ISSUER, audience=AUDIENCE, claims=mapping
    )
    token = rsa_key.mint(
        org="globex",
        oid="a1b2",
        appid="hr-agent",
        project="alpha",
        pv=7,
        realm_access={"roles": ["admin", "auditor"]},
        **{"https://acme.example/departments": ["研发部"]},
    )
    identity = await provider.authenticate(BearerToken(token))
    assert (identity.tenant_id, identity.user_id, identity.agent_id) == ("globex", "a1b2", "hr-agent")
    assert identity.workspace_id == "alpha"
    assert identity.roles == frozenset({"admin", "auditor"})
    assert identity.department_ids == frozenset({"研发部"})
    assert identity.permission_version == "7"


async def test_space_delimited_scope_claim_becomes_roles(jwks_server, clock, rsa_key):
    provider = JwtProvider(
        keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock),
        issuer=ISSUER,
        audience=AUDIENCE,
        claims=ClaimMapping(roles="scp"),
    )
    identity = await provider.authenticate(BearerToken(rsa_key.mint(scp="memory.read memory.write")))
    assert identity.roles == frozenset({"memory.read", "memory.write"})


async def test_default_tenant_for_single_tenant_idp(jwks_server, clock, rsa_key, drop):
    provider = JwtProvider(
        keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock),
        issuer=ISSUER,
        audience=AUDIENCE,
        claims=ClaimMapping(tenant_id=None),
        default_tenant_id="acme",
    )
    identity = await provider.authenticate(BearerToken(rsa_key.mint(tid=drop)))
    assert identity.tenant_id == "acme"


async def test_static_pem_key(rsa_key):
    provider = JwtProvider(keys=StaticKeys([VerificationKey.from_pem(rsa_key.public_pem())]), issuer=ISSUER, audience=AUDIENCE)
    token = jwt.encode(  # no kid: a single configured key is unambiguous
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "tid": "acme", "azp": "a", "exp": int(time.time()) + 60},
        rsa_key.private,
        algorithm="RS256",
    )
    identity = await provider.authenticate(BearerToken(token))
    assert identity.user_id == "u1"


async def test_eddsa_token_accepted_with_static_jwk(ed_key):
    provider = JwtProvider(keys=StaticKeys([VerificationKey.from_jwk(ed_key.jwk())]), issuer=ISSUER, audience=AUDIENCE)
    identity = await provider.authenticate(BearerToken(ed_key.mint()))
    assert identity.user_id == "u17"


async def test_expired_token_accepted_within_leeway(provider, rsa_key):
    now = int(time.time())
    identity = await provider.authenticate(BearerToken(rsa_key.mint(exp=now - 3, iat=now - 100, nbf=now - 100)))
    assert identity.user_id == "u17"


# ------------------------------------------------------------------ algorithm attacks
async def test_alg_none_rejected(provider):
    token = _b64({"alg": "none", "typ": "JWT", "kid": "rsa-1"}) + "." + _b64(
        {"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "tid": "acme", "azp": "x", "exp": int(time.time()) + 60}
    ) + "."
    with pytest.raises(InvalidCredential, match="algorithm 'none' is not allowed"):
        await provider.authenticate(BearerToken(token))


@pytest.mark.parametrize("alg_case", ["None", "NONE", "nOnE"])
async def test_alg_none_case_variants_rejected(provider, alg_case):
    token = _b64({"alg": alg_case, "kid": "rsa-1"}) + "." + _b64({"sub": "admin"}) + "."
    with pytest.raises(InvalidCredential, match="is not allowed"):
        await provider.authenticate(BearerToken(token))


async def test_hs256_signed_with_rsa_public_key_rejected(provider, rsa_key):
    """The classic confusion attack: HMAC keyed with the RSA public key the server trusts."""
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "tid": "acme", "azp": "x", "exp": now + 60}
    header = _b64({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"})
    body = _b64(payload)
    import hashlib
    import hmac

    sig = hmac.new(rsa_key.public_pem(), f"{header}.{body}".encode(), hashlib.sha256).digest()
    token = f"{header}.{body}." + base64.urlsafe_b64encode(sig).rstrip(b"=").decode()
    with pytest.raises(InvalidCredential, match="algorithm 'HS256' is not allowed"):
        await provider.authenticate(BearerToken(token))


async def test_rsa_kid_with_ec_algorithm_rejected(provider, rsa_key, ec_key):
    """A token signed by the EC key but naming the RSA key's kid: the alg is pinned to the key."""
    token = ec_key.mint(headers={"kid": "rsa-1"})
    with pytest.raises(InvalidCredential, match=r"does not match its key \(kid='rsa-1'"):
        await provider.authenticate(BearerToken(token))


def test_hs_algorithms_cannot_be_configured():
    with pytest.raises(IdentityConfigurationError, match="HS256"):
        JwtProvider(keys=None, issuer=ISSUER, audience=AUDIENCE, algorithms=["HS256"])  # type: ignore[arg-type]


async def test_ps256_rejected_when_only_rs256_pinned(jwks_server, clock, rsa_key):
    provider = JwtProvider(
        keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock), issuer=ISSUER, audience=AUDIENCE, algorithms=["RS256"]
    )
    with pytest.raises(InvalidCredential, match="'PS256' is not allowed"):
        await provider.authenticate(BearerToken(rsa_key.mint(alg="PS256")))


async def test_jwk_alg_restricts_rsa_key(jwks_server, clock, rsa_key):
    """The JWKS says rsa-1 is RS256-only, so a PS256 token under it is refused."""
    provider = JwtProvider(keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock), issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(InvalidCredential, match="'PS256' does not match its key"):
        await provider.authenticate(BearerToken(rsa_key.mint(alg="PS256")))


# ------------------------------------------------------------------ keys and signatures
async def test_unknown_kid_rejected(provider, rsa_key_2):
    with pytest.raises(InvalidCredential, match=r"unknown signing key \(kid='rsa-2'\)"):
        await provider.authenticate(BearerToken(rsa_key_2.mint()))


async def test_forged_signature_with_known_kid_rejected(provider, rsa_key_2):
    """Signed by an attacker key but claiming the trusted kid."""
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await provider.authenticate(BearerToken(rsa_key_2.mint(headers={"kid": "rsa-1"})))


async def test_tampered_payload_rejected(provider, rsa_key):
    header, _payload, sig = rsa_key.mint().split(".")
    forged = _b64({"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "tid": "acme", "azp": "x", "exp": int(time.time()) + 60})
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await provider.authenticate(BearerToken(f"{header}.{forged}.{sig}"))


@pytest.mark.parametrize("token", ["", "abc", "a.b", "a.b.c", "x" * 20000])
async def test_malformed_tokens_rejected(provider, token):
    with pytest.raises(InvalidCredential, match="malformed bearer token"):
        await provider.authenticate(BearerToken(token))


async def test_no_kid_with_several_keys_is_ambiguous(provider, rsa_key):
    token = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60}, rsa_key.private, algorithm="RS256")
    with pytest.raises(InvalidCredential, match="no kid and the signing key is ambiguous"):
        await provider.authenticate(BearerToken(token))


async def test_missing_credential_is_unauthenticated(provider):
    with pytest.raises(Unauthenticated, match="no credential presented"):
        await provider.authenticate(None)  # type: ignore[arg-type]


async def test_wrong_credential_kind_is_unauthenticated(provider):
    with pytest.raises(Unauthenticated, match="expected a BearerToken credential, got ApiKey"):
        await provider.authenticate(ApiKey("vbk_x"))  # type: ignore[arg-type]


# ------------------------------------------------------------------ time claims
async def test_expired_token_rejected(provider, rsa_key):
    now = int(time.time())
    with pytest.raises(ExpiredCredential, match=r"expired \(exp\)"):
        await provider.authenticate(BearerToken(rsa_key.mint(exp=now - 60, iat=now - 600, nbf=now - 600)))


async def test_not_yet_valid_token_rejected(provider, rsa_key):
    now = int(time.time())
    with pytest.raises(ExpiredCredential, match=r"not yet valid \(nbf\)"):
        await provider.authenticate(BearerToken(rsa_key.mint(nbf=now + 120, exp=now + 600)))


async def test_token_without_exp_rejected(provider, rsa_key, drop):
    with pytest.raises(InvalidCredential, match="missing required claim 'exp'"):
        await provider.authenticate(BearerToken(rsa_key.mint(exp=drop)))


# ------------------------------------------------------------------ iss / aud / required claims
async def test_wrong_issuer_rejected(provider, rsa_key):
    with pytest.raises(InvalidCredential, match=r"issuer \(iss\) is not accepted"):
        await provider.authenticate(BearerToken(rsa_key.mint(iss="https://evil.example/")))


async def test_missing_issuer_rejected(provider, rsa_key, drop):
    with pytest.raises(InvalidCredential, match="missing required claim 'iss'"):
        await provider.authenticate(BearerToken(rsa_key.mint(iss=drop)))


async def test_wrong_audience_rejected(provider, rsa_key):
    with pytest.raises(InvalidCredential, match=r"audience \(aud\) is not accepted"):
        await provider.authenticate(BearerToken(rsa_key.mint(aud="another-api")))


async def test_missing_audience_rejected(provider, rsa_key, drop):
    with pytest.raises(InvalidCredential, match="missing required claim 'aud'"):
        await provider.authenticate(BearerToken(rsa_key.mint(aud=drop)))


async def test_audience_list_containing_ours_accepted(provider, rsa_key):
    identity = await provider.authenticate(BearerToken(rsa_key.mint(aud=["other", AUDIENCE])))
    assert identity.user_id == "u17"


async def test_configured_required_claim_missing_rejected(jwks_server, clock, rsa_key):
    provider = JwtProvider(
        keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock),
        issuer=ISSUER,
        audience=AUDIENCE,
        required_claims=["email_verified"],
    )
    with pytest.raises(InvalidCredential, match="missing required claim 'email_verified'"):
        await provider.authenticate(BearerToken(rsa_key.mint()))
    assert (await provider.authenticate(BearerToken(rsa_key.mint(email_verified=True)))).user_id == "u17"


@pytest.mark.parametrize(
    ("claim", "field"), [("sub", "user_id"), ("tid", "tenant_id")]
)
async def test_missing_identity_claim_rejected_naming_it(provider, rsa_key, drop, claim, field):
    with pytest.raises(InvalidCredential, match=f"no claim for {field} \\(tried {claim}\\)"):
        await provider.authenticate(BearerToken(rsa_key.mint(**{claim: drop})))


async def test_missing_agent_claim_rejected_naming_alternatives(provider, rsa_key, drop):
    with pytest.raises(InvalidCredential, match=r"no claim for agent_id \(tried azp, client_id\)"):
        await provider.authenticate(BearerToken(rsa_key.mint(azp=drop)))


# ------------------------------------------------------------------ claims failing the id grammar
@pytest.mark.parametrize(
    ("claim", "value", "rule"),
    [
        ("sub", "../admin", "path separator"),
        ("sub", "", "must not be empty"),
        ("tid", "acme corp", "U+0020"),
        ("azp", "coder\u200b", "U+200B"),
        ("tid", 17, "must be a string"),
    ],
)
async def test_claim_failing_id_grammar_names_the_claim(provider, rsa_key, claim, value, rule):
    with pytest.raises(InvalidCredential, match=f"claim '{claim}' is not a valid id: .*{re.escape(rule)}"):
        await provider.authenticate(BearerToken(rsa_key.mint(**{claim: value})))


async def test_group_failing_id_grammar_names_the_claim(provider, rsa_key):
    with pytest.raises(InvalidCredential, match="claim 'groups' is not a valid id: contains a path separator"):
        await provider.authenticate(BearerToken(rsa_key.mint(groups=["eng", "a/b"])))


async def test_groups_claim_not_a_list_rejected(provider, rsa_key):
    with pytest.raises(InvalidCredential, match="claim 'groups' must be a list of ids"):
        await provider.authenticate(BearerToken(rsa_key.mint(groups={"eng": True})))


# ------------------------------------------------------------------ configuration
def test_private_key_refused_as_verification_key(rsa_key):
    with pytest.raises(IdentityConfigurationError, match="private key"):
        VerificationKey.from_public_key(rsa_key.private)


def test_shared_secret_refused_as_pem():
    with pytest.raises(IdentityConfigurationError, match="not a PEM public key"):
        VerificationKey.from_pem("super-secret-shared-key")


def test_jwk_with_incompatible_alg_refused(rsa_key):
    with pytest.raises(ValueError, match="never accepted"):
        VerificationKey.from_jwk(rsa_key.jwk(alg="HS256"))


def test_symmetric_jwk_refused():
    with pytest.raises(ValueError, match="symmetric"):
        VerificationKey.from_jwk({"kty": "oct", "k": "c2VjcmV0", "kid": "h"})


def test_tenant_must_be_mapped_or_defaulted():
    with pytest.raises(IdentityConfigurationError, match="tenant"):
        JwtProvider(keys=None, issuer=ISSUER, audience=AUDIENCE, claims=ClaimMapping(tenant_id=None))  # type: ignore[arg-type]


async def test_static_pem_key_still_pins_algorithm_and_signature(rsa_key, rsa_key_2, ec_key):
    provider = JwtProvider(keys=StaticKeys([VerificationKey.from_pem(rsa_key.public_pem())]), issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await provider.authenticate(BearerToken(rsa_key_2.mint()))
    with pytest.raises(InvalidCredential, match="'ES256' does not match its key"):
        await provider.authenticate(BearerToken(ec_key.mint()))


async def test_issued_in_the_future_rejected(provider, rsa_key):
    now = int(time.time())
    with pytest.raises(ExpiredCredential, match=r"not yet valid \(iat\)"):
        await provider.authenticate(BearerToken(rsa_key.mint(iat=now + 600, nbf=now - 10, exp=now + 900)))


def test_every_provider_satisfies_the_protocol(provider, tmp_path):
    from identity.providers import (
        ApiKeyProvider,
        ApiKeyStore,
        DevEnvironmentProvider,
        GatewayProvider,
        IdentityProvider,
    )

    store = ApiKeyStore(tmp_path / "k.sqlite")
    for candidate in (provider, ApiKeyProvider(store), GatewayProvider(b"k" * 32), DevEnvironmentProvider({})):
        assert isinstance(candidate, IdentityProvider)
    store.close()


async def test_several_accepted_issuers(jwks_server, clock, rsa_key):
    provider = JwtProvider(
        keys=JwksCache(JWKS_URL, jwks_server.client(), clock=clock), issuer=[ISSUER, "https://idp2.example.test/"], audience=AUDIENCE
    )
    assert (await provider.authenticate(BearerToken(rsa_key.mint(iss="https://idp2.example.test/")))).user_id == "u17"
    with pytest.raises(InvalidCredential, match=r"issuer \(iss\) is not accepted"):
        await provider.authenticate(BearerToken(rsa_key.mint(iss="https://idp3.example.test/")))
