"""Seed 000 isolation level 3: the task an identity acts in comes from its credential (a JWT
claim, a signed gateway header, the dev environment) — never from a request body — it is part of
the fingerprint (a session is bound to its task), and an identity without one keeps exactly the
fingerprint it had before task_id existed."""

from __future__ import annotations

import time

import jwt
import pytest

from identity.errors import InvalidCredential, InvalidIdentityInput
from identity.model import MemoryIdentity, _fingerprint
from identity.providers import BearerToken, ClaimMapping, GatewayProvider, GatewayRequest, JwtProvider, StaticKeys, VerificationKey, sign_gateway_headers
from identity.providers.dev import DevEnvironmentProvider
from tests.identity.idtestkit import AUDIENCE, ISSUER

SECRET = b"t" * 32
BASE = dict(tenant_id="acme", user_id="alice", agent_id="coder", session_id="s1")


def test_an_identity_without_a_task_keeps_its_old_fingerprint():
    plain = MemoryIdentity(**BASE)
    assert plain.fingerprint == _fingerprint("acme", "alice", frozenset(), None, "coder", frozenset(), None)
    river, mountain = MemoryIdentity(**BASE, task_id="river"), MemoryIdentity(**BASE, task_id="mountain")
    assert len({plain.fingerprint, river.fingerprint, mountain.fingerprint}) == 3, "a session bound in one task cannot continue in another"
    assert "task=river" in repr(river)


@pytest.mark.parametrize("bad", ["", "a/b", "..", "t 1", "ｔａｓｋ"])
def test_a_task_id_obeys_the_id_grammar(bad):
    with pytest.raises(InvalidIdentityInput):
        MemoryIdentity(**BASE, task_id=bad)


def _gateway_headers(**extra):
    return sign_gateway_headers(SECRET, method="POST", path="/v1/recall", tenant_id="acme", user_id="alice", agent_id="coder", **extra)


async def test_the_gateway_task_header_is_signed_and_used():
    provider = GatewayProvider(SECRET)
    identity = await provider.authenticate(GatewayRequest("POST", "/v1/recall", _gateway_headers(task_id="river")))
    assert identity.task_id == "river"
    plain = await provider.authenticate(GatewayRequest("POST", "/v1/recall", _gateway_headers()))
    assert plain.task_id is None


@pytest.mark.parametrize("tamper", ["add", "change", "remove"])
async def test_a_task_header_the_gateway_did_not_sign_is_refused(tamper):
    provider = GatewayProvider(SECRET)
    headers = _gateway_headers() if tamper == "add" else _gateway_headers(task_id="river")
    if tamper == "remove":
        del headers["X-VB-Task"]
    else:
        headers["X-VB-Task"] = "mountain"
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await provider.authenticate(GatewayRequest("POST", "/v1/recall", headers))


async def test_a_jwt_claim_maps_to_the_task_only_when_configured(rsa_key):
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "tid": "acme", "azp": "coder", "exp": int(time.time()) + 60, "task": "river"}
    token = jwt.encode(claims, rsa_key.private, algorithm="RS256")
    keys = StaticKeys([VerificationKey.from_pem(rsa_key.public_pem())])
    mapped = await JwtProvider(keys=keys, issuer=ISSUER, audience=AUDIENCE, claims=ClaimMapping(task_id="task")).authenticate(BearerToken(token))
    assert mapped.task_id == "river"
    unmapped = await JwtProvider(keys=keys, issuer=ISSUER, audience=AUDIENCE).authenticate(BearerToken(token))
    assert unmapped.task_id is None, "a claim nobody configured never becomes a task"


async def test_the_dev_environment_names_the_task():
    from identity.providers.dev import DevEnvironment

    identity = await DevEnvironmentProvider(environ={"VIKING_BRIDGE_TASK_ID": "river"}).authenticate(DevEnvironment())
    assert identity.task_id == "river"
