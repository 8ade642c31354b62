"""What every door shares at its edge: the identity providers a door accepts, built once from the
identity settings, and the default session of a caller whose credential names none.

The HTTP service (`doors/http/auth.py`, which reads credentials from headers) and the MCP server
(`doors/mcp/credentials.py`, from the transport's token or the host's environment) both come
here, so a door never depends on another door and both refuse the same things the same way:
never the development identity, API keys from the shared state when there is one, the gateway's
nonce cache shared by every worker and replica.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from bridge.errors import ConfigurationError
from identity.model import MemoryIdentity
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore
from identity.providers.base import DEFAULT_SESSION_PREFIX, IdentityProvider
from identity.providers.gateway import GatewayProvider
from identity.settings import IdentitySettings, build_provider
from identity.state.nonces import SqliteNonceCache

__all__ = ["build_edge_providers", "default_session_id", "default_session_key", "LOG_CONFIG"]

#: The log configuration of every door served over a socket (the HTTP service, MCP over HTTP):
#: the access log on stdout, everything else on stderr, and uvicorn's own access log off, since it
#: prints the raw path with its query string (query text is a user's words).
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(message)s"}, "default": {"format": "%(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stdout"},
        "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "viking_bridge.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "viking_bridge": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
    },
}


#: The key of default session ids, beside the bridge's state in its home (one per deployment: every
#: worker and door of one home derives the same ids, so a retry lands in the same session).
SESSION_KEY_FILE = "default-session.key"


def default_session_key(home: Path) -> bytes:
    """The server's secret for default session ids: read from `home`, created there (0600) on first
    use. Replicas with different homes derive different ids — each binds its own default session
    for a caller, which costs a binding, never access."""
    path = Path(home) / SESSION_KEY_FILE
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another worker created it first: use theirs
            text = path.read_text(encoding="ascii").strip()
        else:
            text = secrets.token_hex(32)
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(text + "\n")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise ConfigurationError(f"{path} does not hold a default-session key (hex, at least 16 bytes); delete it to make a new one")
    return key


def default_session_id(identity: MemoryIdentity, key: bytes) -> str:
    """The session of requests that name none: keyed with the server's secret (so nobody can compute
    another user's), over everything that decides access. Its namespace is the server's alone: a
    client that names an id there is refused (`identity.providers.base.refuse_default_namespace`)."""
    mac = hmac.new(key, f"vb-default-session|{identity.fingerprint}".encode(), hashlib.sha256).hexdigest()
    return DEFAULT_SESSION_PREFIX + mac[:32]


def build_edge_providers(
    identity: IdentitySettings, kinds: Sequence[str], home: Path, nonce_db_path: Path | None = None, *, shared_state: object = None,
) -> dict[str, IdentityProvider]:
    """One provider per accepted credential kind. The gateway gets the shared nonce cache (every
    worker — and with `shared_state` on PostgreSQL every replica — refuses a nonce any of them
    saw); API keys come from the shared state's repository when there is one; the others are
    built exactly as the library builds them (`identity.settings.build_provider`). Never the
    development provider."""
    shared_nonces = getattr(shared_state, "nonce_cache", None)
    shared_keys = getattr(shared_state, "api_key_repository", None)
    chosen = list(dict.fromkeys(kinds or ([identity.provider] if identity.provider else [])))
    if not chosen or "dev" in chosen:
        raise ConfigurationError(
            "the service needs a real identity provider: set VIKING_BRIDGE_PROVIDER to jwt, api_key or gateway "
            "(or VIKING_BRIDGE_SERVICE_PROVIDERS to several); it never serves the development identity"
        )
    providers: dict[str, IdentityProvider] = {}
    for kind in chosen:
        if kind == "gateway":
            gw = identity.gateway
            if gw is None:
                        raise ConfigurationError("the gateway credential needs VIKING_BRIDGE_GATEWAY__SECRET")
            production = identity.mode == "production"
            providers[kind] = GatewayProvider(
                [gw.secret.get_secret_value(), *(s.get_secret_value() for s in gw.previous_secrets)],
                max_age=gw.max_age_seconds, max_future_skew=gw.max_future_skew_seconds,
                nonce_cache=shared_nonces() if shared_nonces else SqliteNonceCache(nonce_db_path or home / "gateway-nonces.sqlite3"),
                require_nonce=gw.require_nonce or production, require_body_hash=gw.require_body_hash or production,
            )
        elif kind == "api_key" and shared_keys is not None:
            providers[kind] = ApiKeyProvider(ApiKeyStore(shared_keys()))
        else:
            providers[kind] = build_provider(identity.model_copy(update={"provider": kind}))
    return providers
