"""`viking-bridge dev-token`: a development JWT the HTTP MCP server accepts, minted only in
development mode with a signing key the operator configured, whose public half is the provider's
verification key. Run as the real console script against the session's MCP HTTP server."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.mcp.mcpkit import CONSOLE_SCRIPT, base_env
from tests.mcp.test_http import call
from tests.service.servicekit import AUDIENCE, ISSUER, Service


def _pem_private(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _pem_public(key: rsa.RSAPrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def _dev_token(tmp: Path, server_key: rsa.RSAPrivateKey, signing_key: rsa.RSAPrivateKey | None, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**base_env(), "VIKING_BRIDGE_PROVIDER": "jwt", "VIKING_BRIDGE_JWT__ISSUER": ISSUER,
            "VIKING_BRIDGE_JWT__AUDIENCE": AUDIENCE, "VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM": _pem_public(server_key), **env}
    if signing_key is not None:
        path = tmp / f"dev-{uuid.uuid4().hex[:6]}.pem"
        path.write_bytes(_pem_private(signing_key))
        full["VIKING_BRIDGE_JWT__DEV_SIGNING_KEY_FILE"] = str(path)
    return subprocess.run([CONSOLE_SCRIPT, "dev-token", *args], env=full, capture_output=True, text=True, timeout=60)


async def test_a_dev_token_is_accepted_by_the_http_mcp_server_as_exactly_that_identity(mcp_http: Service, tmp_path: Path) -> None:
    user = f"dev{uuid.uuid4().hex[:8]}"
    done = _dev_token(tmp_path, mcp_http.jwt_key, mcp_http.jwt_key, "--tenant", "acme", "--user", user, "--agent", "assistant", "--ttl", "600")
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["sub"] == user and claims["tid"] == "acme" and claims["azp"] == "assistant" and claims["exp"] - claims["iat"] == 600
    [stored] = await call(mcp_http, token, ("remember", {"content": f"{user} likes green tea", "kind": "preference"}))
    assert not stored.is_error, stored
    assert stored.structured_content["scope"] == f"acme/user/{user}"


@pytest.mark.parametrize("case", ["production", "no key", "another key", "jwks provider"])
def test_no_dev_token_without_development_mode_and_the_servers_own_key(case: str, tmp_path: Path) -> None:
    server = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signing, env = server, {}
    if case == "production":
        env = {"VIKING_BRIDGE_MODE": "production"}
    elif case == "no key":
        signing = None
    elif case == "another key":
        signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        env = {"VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM": "", "VIKING_BRIDGE_JWT__JWKS_URL": "https://idp.test.invalid/keys"}
    done = _dev_token(tmp_path, server, signing, "--tenant", "acme", "--user", "u", "--agent", "a", **env)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and "error:" in done.stderr
    expected = {"production": "production", "no key": "VIKING_BRIDGE_JWT__DEV_SIGNING_KEY_FILE",
                "another key": "not the provider's verification key", "jwks provider": "JWKS"}[case]
    assert expected in done.stderr, done.stderr
