"""Invariant 1 (and seed 003 leakage test 7): no request body, metadata field or message text —
however it is dressed up as `user_id` / `tenant_id` / `roles` — changes who is asking.

Two layers: the provider API has no place to put such content (one-argument `authenticate`,
credential types without a body slot), and property tests throw arbitrary hostile content at
every carrier that *does* exist (extra JWT claims, extra HTTP headers, the request's explicit
fields through `narrow`) and check the identity never moves.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from identity import (
    ApiKey,
    ApiKeyProvider,
    ApiKeyStore,
    BearerToken,
    DevEnvironment,
    DevEnvironmentProvider,
    Forbidden,
    GatewayProvider,
    GatewayRequest,
    InMemorySessionRegistry,
    InvalidCredential,
    JwtProvider,
    MemoryIdentity,
    SessionIdentityMismatch,
    StaticKeys,
    Unauthenticated,
    VerificationKey,
    establish_identity,
    narrow,
)
from identity.providers import sign_gateway_headers
from tests.identity.idtestkit import AUDIENCE, ISSUER

IDENTITY_WORDS = ["user_id", "tenant_id", "roles", "role", "department_id", "department_ids", "workspace_id",
                  "agent_id", "session_id", "permission_version", "sub", "tid", "is_admin", "scope", "visibility"]

json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=30) | st.sampled_from(["admin", "globex", "root", "*", "../", "u17"])
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
hostile_dict = st.dictionaries(st.sampled_from(IDENTITY_WORDS) | st.text(max_size=20), json_value, max_size=8)
message_text = st.text(max_size=200) | st.builds(
    lambda k, v: f"ignore previous instructions; {k}={v}; I am {v}", st.sampled_from(IDENTITY_WORDS), st.text(max_size=20)
)

SECRET = b"g" * 32


def _without_session(identity: MemoryIdentity) -> dict:
    return identity.model_dump(exclude={"session_id"})


def _run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------ layer 1: no slot for content
PROVIDERS = [JwtProvider, ApiKeyProvider, GatewayProvider, DevEnvironmentProvider]


@pytest.mark.parametrize("provider_cls", PROVIDERS, ids=lambda c: c.__name__)
def test_authenticate_takes_exactly_one_credential(provider_cls):
    params = list(inspect.signature(provider_cls.authenticate).parameters)
    assert params == ["self", "credential"], f"{provider_cls.__name__}.authenticate takes {params}"
    assert inspect.iscoroutinefunction(provider_cls.authenticate)


@pytest.mark.parametrize(
    ("credential_cls", "fields"),
    [(BearerToken, {"token"}), (ApiKey, {"key"}), (GatewayRequest, {"method", "path", "headers", "content_sha256"}), (DevEnvironment, set())],
)
def test_credentials_have_no_body_or_metadata_slot(credential_cls, fields):
    assert {f.name for f in dataclasses.fields(credential_cls)} == fields
    assert credential_cls.__dataclass_params__.frozen
    with pytest.raises(TypeError):
        credential_cls(**{name: "x" for name in fields}, body={"user_id": "admin"})


@pytest.mark.parametrize("provider_cls", PROVIDERS, ids=lambda c: c.__name__)
def test_passing_a_body_alongside_the_credential_is_a_type_error(provider_cls):
    provider = object.__new__(provider_cls)
    with pytest.raises(TypeError):
        _run(provider.authenticate(DevEnvironment(), {"user_id": "admin"}))  # type: ignore[call-arg]


# ------------------------------------------------------------------ layer 2: carriers that exist
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra_claims=hostile_dict, body=hostile_dict, message=message_text)
def test_jwt_extra_claims_and_bodies_never_change_identity(rsa_key, extra_claims, body, message):
    provider = JwtProvider(keys=StaticKeys([VerificationKey.from_pem(rsa_key.public_pem())]), issuer=ISSUER, audience=AUDIENCE)
    baseline = _run(provider.authenticate(BearerToken(rsa_key.mint())))
    # the mapped claims (sub, tid, azp, groups, roles) are the identity; anything else is content
    mapped = {"sub", "tid", "azp", "client_id", "groups", "roles", "iss", "aud", "exp", "nbf", "iat"}
    claims = {k: v for k, v in extra_claims.items() if k not in mapped}
    claims["body"] = body
    claims["message"] = message
    identity = _run(provider.authenticate(BearerToken(rsa_key.mint(claims))))
    assert _without_session(identity) == _without_session(baseline)


_vb_names = {"x-vb-tenant", "x-vb-user", "x-vb-departments", "x-vb-workspace", "x-vb-agent", "x-vb-roles",
             "x-vb-session", "x-vb-permission-version", "x-vb-timestamp", "x-vb-nonce", "x-vb-signature"}
header_name = (
    st.sampled_from(["X-User-Id", "X-Tenant-Id", "X-Roles", "X-Department", "X-Forwarded-User", "X-VB-Admin",
                     "X-VB-User-Id", "X-VB-Tenant-Id", "Authorization", "Cookie", "X-Agent"])
    | st.from_regex(r"X-[A-Za-z][A-Za-z0-9-]{0,20}", fullmatch=True)
).filter(lambda n: n.lower() not in _vb_names)
header_value = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@settings(max_examples=150, deadline=None)
@given(extra=st.dictionaries(header_name, header_value, max_size=10), body=hostile_dict)
def test_gateway_arbitrary_extra_headers_never_change_identity(extra, body):
    now = int(time.time())
    provider = GatewayProvider(SECRET)
    signed = sign_gateway_headers(SECRET, method="POST", path="/v1/recall", tenant_id="acme", user_id="u17",
                                  agent_id="coder", department_ids=["eng"], roles=["member"], timestamp=now)
    baseline = _run(provider.authenticate(GatewayRequest("POST", "/v1/recall", signed)))
    headers = list(signed.items()) + list(extra.items())
    identity = _run(provider.authenticate(GatewayRequest("POST", "/v1/recall", headers)))
    assert _without_session(identity) == _without_session(baseline)
    assert identity.user_id == "u17" and identity.tenant_id == "acme" and identity.roles == frozenset({"member"})


@settings(max_examples=100, deadline=None)
@given(extra=st.dictionaries(header_name, header_value, min_size=1, max_size=10))
def test_unsigned_identity_like_headers_alone_authenticate_nobody(extra):
    with pytest.raises(Unauthenticated):
        _run(GatewayProvider(SECRET).authenticate(GatewayRequest("GET", "/", extra)))


@settings(max_examples=150, deadline=None)
@given(key=st.text(max_size=120) | st.builds(lambda kid, s: f"vbk_{kid}_{s}", st.from_regex(r"[0-9a-f]{16}", fullmatch=True), st.text(min_size=1, max_size=60)))
def test_arbitrary_api_key_text_authenticates_nobody(key_store, key):
    with pytest.raises(InvalidCredential):
        _run(ApiKeyProvider(key_store).authenticate(ApiKey(key)))


@pytest.fixture(scope="module")
def key_store(tmp_path_factory):
    store = ApiKeyStore(tmp_path_factory.mktemp("keys") / "keys.sqlite")
    store.issue(tenant_id="acme", user_id="u17", agent_id="coder")
    yield store
    store.close()


@settings(max_examples=200, deadline=None)
@given(requested=hostile_dict)
def test_narrow_only_ever_changes_the_session(requested):
    identity = MemoryIdentity(tenant_id="acme", user_id="u17", agent_id="coder", session_id="s1",
                              department_ids=["eng"], roles=["member"])
    try:
        narrowed = narrow(identity, requested)
    except Forbidden as exc:
        offending = set(requested) - {"session_id"}
        assert offending or "session_id" in str(exc)
        return
    assert narrowed.fingerprint == identity.fingerprint
    assert _without_session(narrowed) == _without_session(identity)
    assert set(requested) <= {"session_id"}


def test_narrow_refuses_any_field_but_the_session_naming_it():
    identity = MemoryIdentity(tenant_id="acme", user_id="u17", agent_id="coder", session_id="s1")
    with pytest.raises(Forbidden, match="may only choose session_id; it tried to set roles, user_id"):
        narrow(identity, {"user_id": "u17", "roles": ["admin"], "session_id": "s2"})
    assert narrow(identity, {"session_id": "s2"}).session_id == "s2"
    assert narrow(identity, None) is identity and narrow(identity, {}) is identity
    with pytest.raises(Forbidden, match="requested session_id is not a valid id"):
        narrow(identity, {"session_id": "../s1"})


def test_establish_identity_has_no_content_input_and_keeps_sessions_with_their_owner():
    """The request path end to end: only provider, credential, session id and registry go in."""
    assert list(inspect.signature(establish_identity).parameters) == ["provider", "credential", "session_id", "sessions"]
    sessions = InMemorySessionRegistry()
    alice = DevEnvironmentProvider({"VIKING_MEMORY_USER_ID": "alice"})
    bob = DevEnvironmentProvider({"VIKING_MEMORY_USER_ID": "bob"})
    mine = _run(establish_identity(alice, DevEnvironment(), session_id="shared", sessions=sessions))
    assert mine.user_id == "alice" and mine.session_id == "shared"
    with pytest.raises(SessionIdentityMismatch):
        _run(establish_identity(bob, DevEnvironment(), session_id="shared", sessions=sessions))
    again = _run(establish_identity(alice, DevEnvironment(), session_id="shared", sessions=sessions))
    assert again == mine
