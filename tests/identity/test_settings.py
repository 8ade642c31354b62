"""Settings: env prefix VIKING_BRIDGE_, nested per provider, errors name the bad variable, and
`build_provider` refuses the development fallback in production."""

from __future__ import annotations

import hashlib

import pytest

from identity.errors import IdentityConfigurationError, InvalidCredential
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
    sign_gateway_headers,
)
from identity.sessions import InMemorySessionRegistry, SqliteSessionRegistry
from identity.settings import build_provider, build_session_registry, load_settings
from tests.identity.idtestkit import AUDIENCE, ISSUER, JWKS_URL


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith(("VIKING_BRIDGE_", "VIKING_MEMORY_")):
            monkeypatch.delenv(name)
    return monkeypatch


def test_defaults_are_development_with_dev_provider():
    settings = load_settings()
    assert settings.mode == "development" and settings.provider is None
    assert isinstance(build_provider(settings), DevEnvironmentProvider)
    assert isinstance(build_session_registry(settings), InMemorySessionRegistry)


async def test_jwt_from_env_with_nested_settings(clean_env, jwks_server, rsa_key):
    clean_env.setenv("VIKING_BRIDGE_PROVIDER", "jwt")
    clean_env.setenv("VIKING_BRIDGE_JWT__ISSUER", ISSUER)
    clean_env.setenv("VIKING_BRIDGE_JWT__AUDIENCE", f"other,{AUDIENCE}")
    clean_env.setenv("VIKING_BRIDGE_JWT__JWKS_URL", JWKS_URL)
    clean_env.setenv("VIKING_BRIDGE_JWT__CLAIMS__ROLES", "app_roles")
    clean_env.setenv("VIKING_BRIDGE_JWT__CLAIMS__WORKSPACE_ID", '["project", "ws"]')
    clean_env.setenv("VIKING_BRIDGE_JWT__LEEWAY_SECONDS", "5")
    settings = load_settings()
    assert settings.jwt.audience == ("other", AUDIENCE)
    assert settings.jwt.claims.workspace_id == ("project", "ws")
    provider = build_provider(settings, http_client=jwks_server.client())
    assert isinstance(provider, JwtProvider) and provider.leeway == 5
    identity = await provider.authenticate(BearerToken(rsa_key.mint(app_roles=["editor"], ws="alpha")))
    assert identity.roles == frozenset({"editor"}) and identity.workspace_id == "alpha"


async def test_jwt_task_claim_from_env(clean_env, jwks_server, rsa_key):
    """VIKING_BRIDGE_JWT__CLAIMS__TASK_ID names the claim of a token's task (task memory, seed 000
    level 3); without it set, a token's task claim is never read."""
    clean_env.setenv("VIKING_BRIDGE_PROVIDER", "jwt")
    clean_env.setenv("VIKING_BRIDGE_JWT__ISSUER", ISSUER)
    clean_env.setenv("VIKING_BRIDGE_JWT__AUDIENCE", AUDIENCE)
    clean_env.setenv("VIKING_BRIDGE_JWT__JWKS_URL", JWKS_URL)
    clean_env.setenv("VIKING_BRIDGE_JWT__CLAIMS__TASK_ID", "task")
    settings = load_settings()
    assert settings.jwt.claims.task_id == ("task",)
    provider = build_provider(settings, http_client=jwks_server.client())
    assert (await provider.authenticate(BearerToken(rsa_key.mint(task="river-7")))).task_id == "river-7"
    clean_env.delenv("VIKING_BRIDGE_JWT__CLAIMS__TASK_ID")
    unmapped = build_provider(load_settings(), http_client=jwks_server.client())
    assert (await unmapped.authenticate(BearerToken(rsa_key.mint(task="river-7")))).task_id is None


async def test_jwt_with_public_key_file(clean_env, tmp_path, rsa_key):
    pem = tmp_path / "idp.pem"
    pem.write_bytes(rsa_key.public_pem())
    settings = load_settings(
        provider="jwt", jwt={"issuer": ISSUER, "audience": AUDIENCE, "public_key_file": str(pem)}
    )
    provider = build_provider(settings)
    assert (await provider.authenticate(BearerToken(rsa_key.mint(headers={"kid": None})))).user_id == "u17"
    # a plain PEM has no kid, so it is "the" key whatever kid the IdP stamps on its tokens
    assert (await provider.authenticate(BearerToken(rsa_key.mint()))).user_id == "u17"


def test_env_file_is_read(tmp_path):
    env_file = tmp_path / "identity.env"
    env_file.write_text("VIKING_BRIDGE_PROVIDER=api_key\nVIKING_BRIDGE_API_KEYS__DB_PATH=%s\n" % (tmp_path / "k.sqlite"))
    settings = load_settings(env_file=env_file)
    assert settings.provider == "api_key"
    assert isinstance(build_provider(settings), ApiKeyProvider)


async def test_api_key_provider_built_from_settings(tmp_path):
    db = tmp_path / "keys.sqlite"
    issued = ApiKeyStore(db).issue(tenant_id="acme", user_id="u1", agent_id="a")
    provider = build_provider(load_settings(provider="api_key", api_keys={"db_path": str(db)}))
    assert (await provider.authenticate(ApiKey(issued.key))).user_id == "u1"


async def test_gateway_from_env_with_previous_secret(clean_env):
    new, old = "n" * 40, "o" * 40
    clean_env.setenv("VIKING_BRIDGE_PROVIDER", "gateway")
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__SECRET", new)
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__PREVIOUS_SECRETS", old)
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__REQUIRE_NONCE", "true")
    provider = build_provider(load_settings())
    assert isinstance(provider, GatewayProvider)
    headers = sign_gateway_headers(old, method="GET", path="/", tenant_id="t", user_id="u", agent_id="a", nonce="nonce-123456", body=b"")
    assert (await provider.authenticate(GatewayRequest("GET", "/", headers, content_sha256=hashlib.sha256(b"").hexdigest()))).user_id == "u"
    assert "n" * 40 not in repr(load_settings())


async def test_the_gateway_settings_require_a_nonce_and_a_body_digest_by_default(clean_env):
    """The safe behaviour is the default (docs/service.md, docs/security.md say the signature
    binds the body and a request cannot be replayed): a signature without the body digest
    would carry any body, and one without a nonce could be replayed inside the window."""
    clean_env.setenv("VIKING_BRIDGE_PROVIDER", "gateway")
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__SECRET", "n" * 40)
    provider = build_provider(load_settings())
    empty = hashlib.sha256(b"").hexdigest()
    no_body = sign_gateway_headers("n" * 40, method="GET", path="/", tenant_id="t", user_id="u", agent_id="a", nonce="nonce-abcdefgh")
    with pytest.raises(InvalidCredential, match="X-VB-Content-SHA256"):
        await provider.authenticate(GatewayRequest("GET", "/", no_body, content_sha256=empty))
    no_nonce = sign_gateway_headers("n" * 40, method="GET", path="/", tenant_id="t", user_id="u", agent_id="a", body=b"")
    with pytest.raises(InvalidCredential, match="X-VB-Nonce"):
        await provider.authenticate(GatewayRequest("GET", "/", no_nonce, content_sha256=empty))
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__REQUIRE_NONCE", "false")  # an explicit, documented opt-out
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__REQUIRE_BODY_HASH", "false")
    lax = build_provider(load_settings())
    assert (await lax.authenticate(GatewayRequest("GET", "/", sign_gateway_headers("n" * 40, method="GET", path="/", tenant_id="t", user_id="u", agent_id="a")))).user_id == "u"


def test_production_refuses_dev_provider_explicitly(clean_env):
    clean_env.setenv("VIKING_BRIDGE_MODE", "production")
    clean_env.setenv("VIKING_BRIDGE_PROVIDER", "dev")
    with pytest.raises(IdentityConfigurationError, match="disabled in production.*VIKING_BRIDGE_PROVIDER=jwt"):
        build_provider(load_settings())


def test_production_refuses_missing_provider(clean_env):
    clean_env.setenv("VIKING_BRIDGE_MODE", "prod")
    with pytest.raises(IdentityConfigurationError, match="set VIKING_BRIDGE_PROVIDER to jwt, api_key or gateway"):
        build_provider(load_settings())


def test_production_requires_persistent_session_registry(tmp_path):
    with pytest.raises(IdentityConfigurationError, match="VIKING_BRIDGE_SESSION_DB_PATH is required"):
        build_session_registry(load_settings(mode="production"))
    registry = build_session_registry(load_settings(mode="production", session_db_path=str(tmp_path / "s.sqlite")))
    assert isinstance(registry, SqliteSessionRegistry)


def test_production_requires_https_jwks():
    settings = load_settings(
        mode="production", provider="jwt", jwt={"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "http://idp/jwks"}
    )
    with pytest.raises(IdentityConfigurationError, match="JWKS_URL must be https"):
        build_provider(settings)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"VIKING_BRIDGE_MODE": "staging"}, "'staging' is not a mode"),
        ({"VIKING_BRIDGE_PROVIDER": "ldap"}, "VIKING_BRIDGE_PROVIDER: Input should be 'jwt', 'api_key', 'gateway' or 'dev'"),
        ({"VIKING_BRIDGE_JWT__AUDIENCE": "x"}, "VIKING_BRIDGE_JWT__ISSUER: Field required"),
        ({"VIKING_BRIDGE_JWT__ISSUER": "i", "VIKING_BRIDGE_JWT__AUDIENCE": "a", "VIKING_BRIDGE_JWT__LEEWAY_SECONDS": "999"},
         "VIKING_BRIDGE_JWT__LEEWAY_SECONDS: Input should be less than or equal to 300"),
        ({"VIKING_BRIDGE_JWT__ISSUER": "i", "VIKING_BRIDGE_JWT__AUDIENCE": "a", "VIKING_BRIDGE_JWT__ALGORITHMS": "RS256,HS256"},
         "VIKING_BRIDGE_JWT__ALGORITHMS: .*HS256.*never none or HS"),
        ({"VIKING_BRIDGE_JWT__ISSUER": "i", "VIKING_BRIDGE_JWT__AUDIENCE": "a", "VIKING_BRIDGE_JWT__JWKS_URL": "file:///etc/keys"},
         "VIKING_BRIDGE_JWT__JWKS_URL: .*must be an http"),
        ({"VIKING_BRIDGE_JWT__ISSUER": "i", "VIKING_BRIDGE_JWT__AUDIENCE": "a", "VIKING_BRIDGE_JWT__CLAIMS__USER_ID": ""},
         "VIKING_BRIDGE_JWT__CLAIMS__USER_ID: .*at least one claim name"),
        ({"VIKING_BRIDGE_GATEWAY__SECRET": "short"}, "VIKING_BRIDGE_GATEWAY__SECRET: .*at least 32 bytes"),
        ({"VIKING_BRIDGE_GATEWAY__SECRET": "s" * 32, "VIKING_BRIDGE_GATEWAY__MAX_AGE_SECONDS": "abc"},
         "VIKING_BRIDGE_GATEWAY__MAX_AGE_SECONDS: Input should be a valid number"),
        ({"VIKING_BRIDGE_GATEWAY__SECRET": "s" * 32, "VIKING_BRIDGE_GATEWAY__TYPO": "1"},
         "VIKING_BRIDGE_GATEWAY__TYPO: Extra inputs are not permitted"),
    ],
)
def test_bad_settings_name_the_variable(clean_env, env, message):
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(IdentityConfigurationError, match=message):
        load_settings()


def test_bad_secret_value_is_not_echoed(clean_env):
    clean_env.setenv("VIKING_BRIDGE_GATEWAY__SECRET", "tooShortSecret")
    with pytest.raises(IdentityConfigurationError) as err:
        load_settings()
    assert "tooShortSecret" not in str(err.value)


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("jwt", "VIKING_BRIDGE_PROVIDER=jwt needs VIKING_BRIDGE_JWT__ISSUER"),
        ("api_key", "needs VIKING_BRIDGE_API_KEYS__DB_PATH"),
        ("gateway", "needs VIKING_BRIDGE_GATEWAY__SECRET"),
    ],
)
def test_selected_provider_without_its_section(provider, message):
    with pytest.raises(IdentityConfigurationError, match=message):
        build_provider(load_settings(provider=provider))


def test_jwt_needs_exactly_one_key_source(rsa_key):
    both = load_settings(
        provider="jwt",
        jwt={"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": JWKS_URL, "public_key_pem": rsa_key.public_pem().decode()},
    )
    with pytest.raises(IdentityConfigurationError, match=r"exactly one of .* \(found: jwks_url, public_key_pem\)"):
        build_provider(both)
    none = load_settings(provider="jwt", jwt={"issuer": ISSUER, "audience": AUDIENCE})
    with pytest.raises(IdentityConfigurationError, match=r"\(found: none\)"):
        build_provider(none)


async def test_unrelated_bridge_variables_are_ignored(clean_env):
    clean_env.setenv("VIKING_BRIDGE_BACKEND", "local")
    clean_env.setenv("VIKING_BRIDGE_TENANT_ID", "acme")  # a dev-provider variable, not a setting
    provider = build_provider(load_settings())
    assert (await provider.authenticate(DevEnvironment())).tenant_id == "acme"
