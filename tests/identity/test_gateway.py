"""Signed gateway headers: accepted only with a valid HMAC over identity + method + path +
timestamp; unsigned, stale, future, altered and replayed requests are refused."""

from __future__ import annotations

import httpx
import pytest

from identity.errors import ExpiredCredential, IdentityConfigurationError, InvalidCredential, Unauthenticated
from identity.state.nonces import InMemoryNonceCache as NonceCache
from identity.providers import GatewayProvider, GatewayRequest, sign_gateway_headers
from identity.providers.gateway import _sign, canonical_string

SECRET = b"s" * 32
OLD_SECRET = b"o" * 32
NOW = 1_700_000_000


def _clock() -> float:
    return float(NOW)


def _headers(**overrides) -> dict[str, str]:
    fields = dict(
        method="POST",
        path="/v1/recall?purpose=chat",
        tenant_id="acme",
        user_id="u17",
        agent_id="coder",
        department_ids=["eng", "研发部"],
        workspace_id="alpha",
        roles=["member"],
        timestamp=NOW,
    )
    fields.update(overrides)
    secret = fields.pop("secret", SECRET)
    return sign_gateway_headers(secret, **fields)


def _provider(**kwargs) -> GatewayProvider:
    kwargs.setdefault("clock", _clock)
    return GatewayProvider(kwargs.pop("secrets", SECRET), **kwargs)


def _req(headers, method="POST", path="/v1/recall?purpose=chat") -> GatewayRequest:
    return GatewayRequest(method=method, path=path, headers=headers)


# ------------------------------------------------------------------ accepted
async def test_signed_headers_accepted():
    identity = await _provider().authenticate(_req(_headers()))
    assert (identity.tenant_id, identity.user_id, identity.agent_id) == ("acme", "u17", "coder")
    assert identity.department_ids == frozenset({"eng", "研发部"})
    assert identity.workspace_id == "alpha" and identity.roles == frozenset({"member"})


async def test_header_names_are_case_insensitive_and_httpx_headers_work():
    lowered = {k.lower(): v for k, v in _headers().items()}
    assert (await _provider().authenticate(_req(lowered))).user_id == "u17"
    assert (await _provider().authenticate(_req(httpx.Headers(_headers())))).user_id == "u17"
    assert (await _provider().authenticate(_req(list(_headers().items())))).user_id == "u17"


async def test_method_case_does_not_matter():
    assert (await _provider().authenticate(_req(_headers(method="post"), method="POST"))).user_id == "u17"


async def test_session_header_is_signed_and_used():
    identity = await _provider().authenticate(_req(_headers(session_id="sess_42")))
    assert identity.session_id == "sess_42"


async def test_previous_secret_accepted_during_rotation():
    provider = _provider(secrets=[SECRET, OLD_SECRET])
    assert (await provider.authenticate(_req(_headers(secret=OLD_SECRET)))).user_id == "u17"


async def test_small_clock_skew_accepted():
    assert (await _provider().authenticate(_req(_headers(timestamp=NOW + 20)))).user_id == "u17"
    assert (await _provider().authenticate(_req(_headers(timestamp=NOW - 299)))).user_id == "u17"


def test_canonical_string_layout():
    text = canonical_string("post", "/p?q=1", {"x-vb-tenant": "acme", "x-vb-timestamp": "5"})
    assert text.split("\n") == ["vb-gateway-v1", "POST", "/p?q=1", "5", "", "acme", "", "", "", "", "", "", "", ""]


# ------------------------------------------------------------------ rejected
async def test_no_gateway_headers_is_unauthenticated():
    with pytest.raises(Unauthenticated, match=r"no gateway identity headers"):
        await _provider().authenticate(_req({"Authorization": "Bearer x"}))


async def test_unsigned_headers_rejected():
    headers = _headers()
    del headers["X-VB-Signature"]
    with pytest.raises(InvalidCredential, match="unsigned"):
        await _provider().authenticate(_req(headers))


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-VB-User", "admin"),
        ("X-VB-Tenant", "globex"),
        ("X-VB-Roles", "admin,member"),
        ("X-VB-Departments", "eng,hr"),
        ("X-VB-Workspace", "beta"),
        ("X-VB-Agent", "hr-agent"),
        ("X-VB-Timestamp", str(NOW + 1)),
    ],
)
async def test_altered_identity_header_rejected(header, value):
    headers = _headers()
    headers[header] = value
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(headers))


@pytest.mark.parametrize("header", ["X-VB-Session", "X-VB-Permission-Version", "X-VB-Nonce"])
async def test_added_signed_header_rejected(header):
    headers = _headers()
    headers[header] = "sneaky_1234"
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(headers))


async def test_removed_identity_header_rejected():
    headers = _headers()
    del headers["X-VB-Workspace"]
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(headers))


async def test_signature_for_other_method_rejected():
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(_headers(method="GET"), method="POST"))


async def test_signature_for_other_path_rejected():
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(_headers(path="/v1/recall?purpose=chat"), path="/v1/admin"))


async def test_signature_with_wrong_secret_rejected():
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(_headers(secret=b"x" * 32)))


async def test_garbage_signature_rejected():
    headers = _headers()
    headers["X-VB-Signature"] = "not-hex"
    with pytest.raises(InvalidCredential, match="signature does not verify"):
        await _provider().authenticate(_req(headers))


async def test_stale_request_rejected():
    with pytest.raises(ExpiredCredential, match=r"stale \(301 s old, window 300 s\)"):
        await _provider().authenticate(_req(_headers(timestamp=NOW - 301)))


async def test_future_request_rejected():
    with pytest.raises(ExpiredCredential, match="31 s in the future"):
        await _provider().authenticate(_req(_headers(timestamp=NOW + 31)))


@pytest.mark.parametrize("timestamp", ["", "abc", "1.7e9", "-5", " 1700000000", "１７００"])
async def test_bad_timestamp_rejected(timestamp):
    headers = _headers()
    headers["X-VB-Timestamp"] = timestamp
    with pytest.raises(InvalidCredential, match="X-VB-Timestamp is missing or not unix seconds"):
        await _provider().authenticate(_req(headers))


async def test_duplicate_identity_header_rejected():
    pairs = list(_headers().items()) + [("x-vb-user", "admin")]
    with pytest.raises(InvalidCredential, match="X-VB-User appears more than once"):
        await _provider().authenticate(_req(pairs))


async def test_line_break_in_header_rejected():
    headers = _headers()
    headers["X-VB-User"] = "u17\nadmin"
    with pytest.raises(InvalidCredential, match="X-VB-User contains a line break"):
        await _provider().authenticate(_req(headers))


async def test_signed_but_invalid_id_rejected_naming_header():
    with pytest.raises(InvalidCredential, match=r"header X-VB-User is not a valid id: .*path separator"):
        await _provider().authenticate(_req(_headers(user_id="../root")))


async def test_signed_but_missing_user_rejected():
    with pytest.raises(InvalidCredential, match="X-VB-User is missing"):
        await _provider().authenticate(_req(_headers(user_id="")))


async def test_replay_refused_with_nonce_cache():
    provider = _provider(nonce_cache=NonceCache(_clock))
    headers = _headers(nonce="n0nce-abc-123")
    assert (await provider.authenticate(_req(headers))).user_id == "u17"
    with pytest.raises(InvalidCredential, match="replayed"):
        await provider.authenticate(_req(headers))


async def test_nonce_required_when_configured():
    with pytest.raises(InvalidCredential, match="no X-VB-Nonce"):
        await _provider(require_nonce=True).authenticate(_req(_headers()))


async def test_nonce_forgotten_after_window():
    now = [float(NOW)]
    cache = NonceCache(lambda: now[0])
    provider = GatewayProvider(SECRET, nonce_cache=cache, clock=lambda: now[0])
    await provider.authenticate(_req(_headers(nonce="nonce-0001")))
    now[0] += 400  # the original request is now stale anyway, so the nonce may be forgotten
    assert cache.check_and_remember("nonce-0001", now[0] + 10) is True


async def test_wrong_credential_kind_rejected():
    with pytest.raises(Unauthenticated, match="expected a GatewayRequest"):
        await _provider().authenticate(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("secrets", [b"short", [], [SECRET, b"tiny"]])
def test_weak_or_missing_secret_is_configuration_error(secrets):
    with pytest.raises(IdentityConfigurationError, match="secret"):
        GatewayProvider(secrets)


# ------------------------------------------------------------------ non-ASCII ids on the wire
def test_non_ascii_ids_travel_percent_encoded():
    headers = _headers(user_id="zoë", department_ids=["研发部"], workspace_id="50%off")
    assert headers["X-VB-Departments"] == "%E7%A0%94%E5%8F%91%E9%83%A8"
    assert headers["X-VB-Workspace"] == "50%25off"
    assert all(v.isascii() for v in headers.values())


async def test_percent_encoded_ids_decode_after_verification():
    headers = _headers(user_id="zoë", department_ids=["研发部", "eng"], workspace_id="50%off")
    identity = await _provider().authenticate(_req(httpx.Headers(headers)))
    assert identity.user_id == "zoë"
    assert identity.department_ids == frozenset({"研发部", "eng"})
    assert identity.workspace_id == "50%off"


async def test_encoded_path_separator_still_rejected():
    """A gateway that (wrongly) forwards a raw `%2F` still cannot smuggle a `/` into an id."""
    headers = _headers(user_id="x")
    headers["X-VB-User"] = "..%2Froot"
    values = {k.lower(): v for k, v in headers.items() if k != "X-VB-Signature"}
    headers["X-VB-Signature"] = _sign(SECRET, canonical_string("POST", "/v1/recall?purpose=chat", values))
    with pytest.raises(InvalidCredential, match="X-VB-User is not a valid id: contains a path separator"):
        await _provider().authenticate(_req(headers))


async def test_a_presented_nonce_is_never_replayable_even_when_not_required():
    """Review finding: without an explicit cache a nonce used to be checked for format only."""
    provider = _provider()  # default: require_nonce=False, no cache passed
    headers = _headers(nonce="n0nce-xyz-789")
    await provider.authenticate(_req(headers))
    with pytest.raises(InvalidCredential, match="replayed"):
        await provider.authenticate(_req(headers))


def test_production_settings_require_a_nonce(monkeypatch):
    from identity.settings import build_provider, load_settings

    settings = load_settings(mode="production", provider="gateway", session_db_path="/tmp/x.sqlite3", gateway={"secret": "k" * 40})
    provider = build_provider(settings)
    assert provider._require_nonce is True


async def test_signed_body_digest_binds_the_body():
    """Review finding: a captured request must not be replayable with another body."""
    import hashlib

    body = b'{"query": "quarterly numbers"}'
    digest = hashlib.sha256(body).hexdigest()
    headers = _headers(body=body)
    provider = _provider()
    assert (await provider.authenticate(GatewayRequest("POST", "/v1/recall?purpose=chat", headers, digest))).user_id == "u17"
    other = hashlib.sha256(b'{"forget": "everything"}').hexdigest()
    with pytest.raises(InvalidCredential, match="does not match the signed"):
        await provider.authenticate(GatewayRequest("POST", "/v1/recall?purpose=chat", headers, other))
    with pytest.raises(InvalidCredential, match="no body digest was given"):
        await provider.authenticate(GatewayRequest("POST", "/v1/recall?purpose=chat", headers))
    stripped = {k: v for k, v in headers.items() if k.lower() != "x-vb-content-sha256"}
    assert len(stripped) == len(headers) - 1
    with pytest.raises(InvalidCredential, match="signature does not verify"):  # removing the digest breaks the signature
        await provider.authenticate(GatewayRequest("POST", "/v1/recall?purpose=chat", stripped, other))


async def test_body_digest_required_when_configured_and_in_production():
    from identity.settings import build_provider, load_settings

    with pytest.raises(InvalidCredential, match="Content-SHA256 \\(required\\)"):
        await _provider(require_body_hash=True).authenticate(_req(_headers()))
    settings = load_settings(mode="production", provider="gateway", session_db_path="/tmp/x.sqlite3", gateway={"secret": "k" * 40})
    assert build_provider(settings)._require_body_hash is True
