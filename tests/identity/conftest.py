"""Fixtures for the identity tests; the helpers live in `idtestkit` (no package __init__ here,
because a `tests/identity` package would shadow the real `identity` package)."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tests.identity.idtestkit import DROP, FakeClock, JwksServer, SigningKey


@pytest.fixture(scope="session")
def drop() -> object:
    """Pass as a claim value to leave that claim out of a minted token."""
    return DROP


@pytest.fixture(scope="session")
def rsa_key() -> SigningKey:
    return SigningKey("rsa-1", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")


@pytest.fixture(scope="session")
def rsa_key_2() -> SigningKey:
    return SigningKey("rsa-2", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")


@pytest.fixture(scope="session")
def ec_key() -> SigningKey:
    return SigningKey("ec-1", ec.generate_private_key(ec.SECP256R1()), "ES256")


@pytest.fixture(scope="session")
def ed_key() -> SigningKey:
    return SigningKey("ed-1", ed25519.Ed25519PrivateKey.generate(), "EdDSA")


@pytest.fixture
def jwks_server(rsa_key: SigningKey, ec_key: SigningKey) -> JwksServer:
    return JwksServer(keys=[rsa_key.jwk(), ec_key.jwk()])


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
