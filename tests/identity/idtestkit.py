"""Test kit for the identity tests (imported by conftest and by tests as `idtestkit`):
real RSA / EC / Ed25519 signing keys, a token minter, an in-process JWKS server and a fake clock."""


from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives import serialization

ISSUER = "https://idp.example.test/"
AUDIENCE = "viking-bridge"
JWKS_URL = "https://idp.example.test/.well-known/jwks.json"


@dataclass
class SigningKey:
    kid: str
    private: Any
    alg: str

    @property
    def public(self) -> Any:
        return self.private.public_key()

    def public_pem(self) -> bytes:
        return self.public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def jwk(self, *, with_alg: bool = True, **extra: Any) -> dict[str, Any]:
        algo = jwt.get_algorithm_by_name(self.alg)
        data = json.loads(algo.to_jwk(self.public))
        data["kid"] = self.kid
        data["use"] = "sig"
        if with_alg:
            data["alg"] = self.alg
        data.update(extra)
        return data

    def mint(self, claims: dict[str, Any] | None = None, *, headers: dict[str, Any] | None = None, alg: str | None = None, **overrides: Any) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "u17",
            "tid": "acme",
            "azp": "coder",
            "groups": ["eng", "ops"],
            "roles": ["member"],
            "iat": now,
            "nbf": now,
            "exp": now + 300,
        }
        payload.update(claims or {})
        payload.update(overrides)
        payload = {k: v for k, v in payload.items() if v is not DROP}
        hdr = {"kid": self.kid} if self.kid else {}
        hdr.update(headers or {})
        hdr = {k: v for k, v in hdr.items() if v is not None and v is not DROP}
        return jwt.encode(payload, self.private, algorithm=alg or self.alg, headers=hdr)


DROP = object()


@dataclass
class JwksServer:
    """An in-process IdP key endpoint. Mutate `keys` to rotate; `hits` counts fetches."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    hits: int = 0
    status: int = 200

    def handler(self, request: httpx.Request) -> httpx.Response:
        assert str(request.url) == JWKS_URL, f"unexpected URL {request.url}"
        self.hits += 1
        if self.status != 200:
            return httpx.Response(self.status, text="down")
        return httpx.Response(200, json={"keys": self.keys})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


