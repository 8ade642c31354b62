"""Development JWTs: `viking-bridge dev-token --tenant T --user U --agent A` prints a bearer token
the configured JWT provider accepts, for trying the HTTP MCP server or the service without an
identity provider.

Why it exists: the HTTP doors take JWTs only (an API key cannot ride an MCP host's OAuth flow), so
a developer without an IdP had no way in. Why it is fenced: a token minted here is an identity
claim anyone holding the key can make. So it mints only
- in development mode (`VIKING_BRIDGE_MODE=production` refuses, whatever else is set);
- with a signing key the operator configured on purpose, `VIKING_BRIDGE_JWT__DEV_SIGNING_KEY_FILE`
  (a PEM private key; asymmetric only — the provider never accepts HS*);
- when that key's public half IS the provider's configured verification key (`PUBLIC_KEY_PEM`
  or `PUBLIC_KEY_FILE`): a key the server would not trust mints nothing, rather than a token
  that fails later with a vaguer 401. A JWKS-configured provider (a real IdP) is refused: its
  keys are the IdP's, and development tokens do not belong there.
Claims are written under the names the provider's claim mapping reads first, so the token
authenticates as exactly the identity asked for; it expires (at most a day).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from identity.errors import IdentityConfigurationError
from identity.settings import IdentitySettings, JwtSettings, load_settings

KEY_SETTING = "VIKING_BRIDGE_JWT__DEV_SIGNING_KEY_FILE"
MAX_TTL_S = 86_400


def _signing_key(jwt_settings: JwtSettings) -> tuple[object, str]:
    path = jwt_settings.dev_signing_key_file
    if path is None:
        raise IdentityConfigurationError(f"no development signing key: set {KEY_SETTING} to a PEM private key whose public key is VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM (or _FILE)")
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise IdentityConfigurationError(f"{KEY_SETTING}={path}: not a readable unencrypted PEM private key ({type(exc).__name__})") from None
    if isinstance(key, rsa.RSAPrivateKey):
        alg = "RS256"
    elif isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1":
        alg = "ES256"
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        alg = "EdDSA"
    else:
        raise IdentityConfigurationError(f"{KEY_SETTING}: use an RSA, P-256 or Ed25519 key")
    if alg not in jwt_settings.algorithms:
        raise IdentityConfigurationError(f"{KEY_SETTING}: its algorithm {alg} is not in VIKING_BRIDGE_JWT__ALGORITHMS")
    return key, alg


def _verification_pem(jwt_settings: JwtSettings) -> bytes:
    if jwt_settings.public_key_pem:
        return jwt_settings.public_key_pem.encode()
    if jwt_settings.public_key_file:
        return Path(jwt_settings.public_key_file).read_bytes()
    raise IdentityConfigurationError("development tokens need a fixed verification key (VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM or _FILE), never an IdP's JWKS")


def _public_der(key: object) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)  # type: ignore[attr-defined]


def mint_dev_token(
    settings: IdentitySettings, *, tenant_id: str, user_id: str, agent_id: str, department_ids: Sequence[str] = (),
    workspace_id: str | None = None, roles: Sequence[str] = (), ttl_s: int = 3600, now: float | None = None,
) -> str:
    """A JWT for this identity that the provider `settings` describe accepts (see the module)."""
    if settings.mode != "development":
        raise IdentityConfigurationError("development tokens are never minted in production mode (VIKING_BRIDGE_MODE=production)")
    if settings.jwt is None:
        raise IdentityConfigurationError("development tokens need the JWT provider configured (VIKING_BRIDGE_JWT__ISSUER, __AUDIENCE, __PUBLIC_KEY_PEM)")
    if not 0 < ttl_s <= MAX_TTL_S:
        raise IdentityConfigurationError(f"--ttl must be between 1 and {MAX_TTL_S} seconds")
    js = settings.jwt
    key, alg = _signing_key(js)
    try:
        trusted = serialization.load_pem_public_key(_verification_pem(js))
    except ValueError:
        from cryptography import x509

        trusted = x509.load_pem_x509_certificate(_verification_pem(js)).public_key()
    if _public_der(trusted) != _public_der(key.public_key()):  # type: ignore[attr-defined]
        raise IdentityConfigurationError(f"{KEY_SETTING}: its public key is not the provider's verification key; the service would refuse its tokens")
    names = js.claims
    issued = int(time.time() if now is None else now)
    claims: dict[str, object] = {"iss": js.issuer[0], "aud": js.audience[0], "iat": issued, "nbf": issued, "exp": issued + ttl_s,
                                 "jti": uuid.uuid4().hex, names.user_id[0]: user_id, names.agent_id[0]: agent_id}
    for field, value in (("tenant_id", tenant_id), ("workspace_id", workspace_id)):
        claim = getattr(names, field)
        if value is None:
            continue
        if not claim:
            raise IdentityConfigurationError(f"the claim mapping has no claim for {field} (VIKING_BRIDGE_JWT__CLAIMS__{field.upper()})")
        claims[claim[0]] = value
    if department_ids:
        claims[names.department_ids[0]] = list(department_ids)
    if roles:
        claims[names.roles[0]] = list(roles)
    return jwt.encode(claims, key, algorithm=alg)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="viking-bridge dev-token", description="Print a development JWT for the configured JWT provider (development mode and VIKING_BRIDGE_JWT__DEV_SIGNING_KEY_FILE only).")
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--department", action="append", default=[])
    parser.add_argument("--workspace")
    parser.add_argument("--role", action="append", default=[], help="admin, approver or global_admin (repeatable)")
    parser.add_argument("--ttl", type=int, default=3600, help=f"seconds, at most {MAX_TTL_S} (default 3600)")
    args = parser.parse_args(argv)
    try:
        token = mint_dev_token(load_settings(), tenant_id=args.tenant, user_id=args.user, agent_id=args.agent, department_ids=args.department,
                               workspace_id=args.workspace, roles=args.role, ttl_s=args.ttl)
    except IdentityConfigurationError as exc:
        print(f"viking-bridge dev-token: error: {exc}", file=sys.stderr)
        return 2
    print(token)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
