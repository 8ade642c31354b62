"""Every public identity entry point answers malformed input with a member of the error tree
: lone surrogates, huge integers, nested containers, None, bytes, arbitrary
objects — never `UnicodeEncodeError`, `TypeError`, `AttributeError` or a raw `ValueError` —
and a refused call writes nothing."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from identity.errors import VikingBridgeError
from identity.ids import validate_id
from identity.model import MemoryIdentity
from identity.state.nonces import InMemoryNonceCache, SqliteNonceCache
from identity.providers import (
    ApiKey,
    ApiKeyProvider,
    ApiKeyStore,
    BearerToken,
    DevEnvironment,
    DevEnvironmentProvider,
    GatewayProvider,
    GatewayRequest,
    JwtProvider,
    StaticKeys,
    VerificationKey,
    narrow,
    sign_gateway_headers,
)
from identity.providers.api_keys import parse_api_key
from identity.request import establish_identity
from identity.sessions import InMemorySessionRegistry, SqliteSessionRegistry

ISSUER, AUDIENCE = "https://idp.fuzz.test/", "viking-bridge"
SECRET = b"g" * 32
_EC = ec.generate_private_key(ec.SECP256R1())

# -- values an attacker (or a buggy caller) can hand us --------------------------------------
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=40)  # surrogates included
SURROGATE = st.sampled_from(["\ud800", "\udfff", "a\udc80b", "\ud83d"])
HUGE_INT = st.integers(min_value=4_301, max_value=6_000).map(lambda n: 10**n)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    HUGE_INT,
    st.floats(allow_nan=True, allow_infinity=True),
    ANY_TEXT,
    SURROGATE,
    st.binary(max_size=20),
    st.just(object()),
    st.just(b"\xff\xfe"),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(ANY_TEXT, st.integers()), inner, max_size=3),
        st.frozensets(st.one_of(ANY_TEXT, st.integers()), max_size=3),
    ),
    max_leaves=8,
) | st.from_type(object)

IDENTITY = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="cli", session_id="s1")


def _only_typed(call: Callable[[], Any]) -> None:
    try:
        result = call()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    except VikingBridgeError:
        pass


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- fixtures shared by the whole module (hypothesis reuses them across examples) -------------
@pytest.fixture(scope="module")
def home() -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


@pytest.fixture(scope="module")
def key_store(home: Path) -> ApiKeyStore:
    store = ApiKeyStore(home / "keys.sqlite3")
    store.issue(tenant_id="acme", user_id="alice", agent_id="cli")
    yield store
    store.close()


@pytest.fixture(scope="module")
def sqlite_sessions(home: Path) -> SqliteSessionRegistry:
    registry = SqliteSessionRegistry(home / "sessions.sqlite3")
    registry.continue_session(IDENTITY)
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def jwt_provider() -> JwtProvider:
    key = VerificationKey.from_public_key(_EC.public_key(), kid="k1", alg="ES256")
    return JwtProvider(keys=StaticKeys([key]), issuer=ISSUER, audience=AUDIENCE)


def _mint(**claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "tid": "acme", "azp": "cli", "exp": now + 60, **claims}
    return jwt.encode(payload, _EC, algorithm="ES256", headers={"kid": "k1"})


# -- ids ----------------------------------------------------------------------------------
@FUZZ
@given(value=VALUES, field=VALUES)
def test_validate_id_raises_only_typed_errors(value, field):
    _only_typed(lambda: validate_id(value, field if isinstance(field, str) else "id"))
    _only_typed(lambda: IDENTITY.with_session(value))
    _only_typed(lambda: narrow(IDENTITY, {"session_id": value}))
    _only_typed(lambda: narrow(IDENTITY, value))


# -- providers -----------------------------------------------------------------------------
@FUZZ
@given(value=VALUES)
def test_every_provider_refuses_malformed_credentials_with_typed_errors(value, jwt_provider, key_store):
    gateway = GatewayProvider(SECRET, nonce_cache=InMemoryNonceCache())
    dev = DevEnvironmentProvider({})
    for provider in (jwt_provider, ApiKeyProvider(key_store), gateway, dev):
        _only_typed(lambda: provider.authenticate(value))
    _only_typed(lambda: jwt_provider.authenticate(BearerToken(value)))
    _only_typed(lambda: ApiKeyProvider(key_store).authenticate(ApiKey(value)))
    _only_typed(lambda: gateway.authenticate(GatewayRequest(method=value, path="/", headers={})))
    _only_typed(lambda: gateway.authenticate(GatewayRequest(method="GET", path=value, headers={})))
    _only_typed(lambda: gateway.authenticate(GatewayRequest(method="GET", path="/", headers=value)))
    _only_typed(lambda: dev.authenticate(DevEnvironment()))
    _only_typed(lambda: establish_identity(dev, DevEnvironment(), session_id=value, sessions=InMemorySessionRegistry()))


@FUZZ
@given(claim=st.sampled_from(["iss", "aud", "sub", "tid", "azp", "groups", "roles", "exp", "nbf", "iat"]), value=VALUES)
def test_signed_token_with_any_claim_value_is_refused_or_accepted_never_crashes(claim, value, jwt_provider):
    try:
        token = _mint(**{claim: value})
    except Exception:  # noqa: BLE001 - PyJWT itself cannot serialise the value: nothing to send
        return
    _only_typed(lambda: jwt_provider.authenticate(BearerToken(token)))


@FUZZ
@given(text=ANY_TEXT, surrogate=SURROGATE)
def test_bearer_token_and_api_key_with_surrogates_are_invalid_credentials(text, surrogate, jwt_provider, key_store):
    token = _mint()
    for bad in (token + surrogate, surrogate + token, token[:20] + surrogate + token[20:], text):
        _only_typed(lambda: jwt_provider.authenticate(BearerToken(bad)))
    key_id = key_store.records()[0].key_id
    for bad in (f"vbk_{key_id}_{surrogate}", f"vbk_{key_id}_{text}", f"vbk_{surrogate}_{text}", f"vbk_{key_id}_abc{surrogate}"):
        _only_typed(lambda: key_store.verify(bad))
        _only_typed(lambda: parse_api_key(bad))


@FUZZ
@given(header=st.sampled_from(["X-VB-User", "X-VB-Tenant", "X-VB-Nonce", "X-VB-Departments", "X-VB-Signature", "X-VB-Timestamp"]),
       value=VALUES)
def test_signed_gateway_request_with_any_header_value_never_crashes(header, value):
    gateway = GatewayProvider(SECRET, nonce_cache=InMemoryNonceCache())
    headers: dict[Any, Any] = sign_gateway_headers(
        SECRET, method="GET", path="/", tenant_id="acme", user_id="u1", agent_id="a", nonce="fuzz-nonce-1"
    )
    headers[header] = value
    _only_typed(lambda: gateway.authenticate(GatewayRequest(method="GET", path="/", headers=headers)))
    _only_typed(lambda: gateway.authenticate(GatewayRequest(method="GET", path="/", headers=list(headers.items()))))
    _only_typed(lambda: gateway.authenticate(GatewayRequest(method="GET", path="/", headers=headers, content_sha256=value)))


# -- API key store ----------------------------------------------------------------------------
@FUZZ
@given(field=st.sampled_from(["tenant_id", "user_id", "agent_id", "department_ids", "workspace_id", "roles",
                              "permission_version", "label"]), value=VALUES)
def test_api_key_admin_operations_refuse_malformed_input_and_write_nothing(field, value, key_store):
    before = key_store.records()
    kwargs: dict[str, Any] = {"tenant_id": "acme", "user_id": "bob", "agent_id": "cli", field: value}
    try:
        issued = key_store.issue(**kwargs)
    except VikingBridgeError:
        assert key_store.records() == before  # refused: nothing was written
    else:
        key_store.revoke(issued.record.key_id)
    _only_typed(lambda: key_store.verify(value))
    _only_typed(lambda: key_store.revoke(value))
    _only_typed(lambda: key_store.get(value))
    _only_typed(lambda: key_store.records(tenant_id=value))


# -- sessions -------------------------------------------------------------------------------
@FUZZ
@given(value=VALUES, other=VALUES)
def test_session_operations_refuse_malformed_input_with_typed_errors(value, other, sqlite_sessions):
    for registry in (sqlite_sessions, InMemorySessionRegistry()):
        _only_typed(lambda: registry.continue_session(value))
        _only_typed(lambda: registry.start_session(value))
        _only_typed(lambda: registry.fork(value, "s1"))
        _only_typed(lambda: registry.fork(IDENTITY, value))
        _only_typed(lambda: registry.binding(value, other))
        _only_typed(lambda: registry.binding("acme", value))


# -- nonce caches -----------------------------------------------------------------------------
@FUZZ
@given(nonce=VALUES, expires=VALUES)
def test_nonce_caches_refuse_malformed_input_with_typed_errors(nonce, expires, home):
    for cache in (InMemoryNonceCache(), SqliteNonceCache(home / "nonces.sqlite3")):
        _only_typed(lambda: cache.check_and_remember(nonce, expires))
        _only_typed(lambda: cache.check_and_remember("fuzz-nonce", expires))
        _only_typed(lambda: cache.check_and_remember(nonce, time.time() + 10))
