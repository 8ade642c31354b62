"""Development fallback: one fixed identity read from environment variables.

Why: a developer on a laptop (and the single-user `pi` memory plugin this project grew out of)
has no IdP, no gateway and no key store; the plugin's variables `VIKING_MEMORY_USER_ID`,
`VIKING_MEMORY_ASSISTANT_ID` and `VIKING_MEMORY_GROUP_ID` keep working, plus ours for the fields
the plugin never had. Seed 003: "environment variables remain only as a local development
fallback; production must never use a global fixed `user_01`". So in production mode
constructing this provider raises — it cannot be switched on by accident.

What it must never do: run in production mode, or take identity from anything per-request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from identity.errors import IdentityConfigurationError
from identity.ids import InvalidIdError, validate_id
from identity.model import MemoryIdentity
from identity.providers.base import DevEnvironment, new_session_id, require_credential

__all__ = ["DevEnvironmentProvider", "MODE_ENV", "resolve_mode"]

MODE_ENV = "VIKING_BRIDGE_MODE"
_MODES = {"development": "development", "dev": "development", "production": "production", "prod": "production"}

PRODUCTION_ADVICE = (
    "the development identity fallback is disabled in production mode "
    f"({MODE_ENV}=production); configure a real identity provider instead: "
    "VIKING_BRIDGE_PROVIDER=jwt (with VIKING_BRIDGE_JWT__ISSUER, VIKING_BRIDGE_JWT__AUDIENCE and "
    "VIKING_BRIDGE_JWT__JWKS_URL), VIKING_BRIDGE_PROVIDER=api_key (with "
    "VIKING_BRIDGE_API_KEYS__DB_PATH) or VIKING_BRIDGE_PROVIDER=gateway (with "
    "VIKING_BRIDGE_GATEWAY__SECRET) — see docs/identity.md"
)

# field -> (env var names, first found wins; default)
_SCALARS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "tenant_id": (("VIKING_BRIDGE_TENANT_ID",), "local"),
    "user_id": (("VIKING_BRIDGE_USER_ID", "VIKING_MEMORY_USER_ID"), "user_01"),
    "agent_id": (("VIKING_BRIDGE_AGENT_ID", "VIKING_MEMORY_ASSISTANT_ID"), "pi"),
    "workspace_id": (("VIKING_BRIDGE_WORKSPACE_ID", "VIKING_MEMORY_GROUP_ID"), None),
    "session_id": (("VIKING_BRIDGE_SESSION_ID",), None),
    "permission_version": (("VIKING_BRIDGE_PERMISSION_VERSION",), None),
    "task_id": (("VIKING_BRIDGE_TASK_ID",), None),
}
_LISTS = {"department_ids": "VIKING_BRIDGE_DEPARTMENT_IDS", "roles": "VIKING_BRIDGE_ROLES"}


def resolve_mode(*modes: str | None) -> str:
    """`production` if any given mode says so; unknown values are configuration errors."""
    resolved = "development"
    for mode in modes:
        if mode is None or mode.strip() == "":
            continue
        value = _MODES.get(mode.strip().lower())
        if value is None:
            raise IdentityConfigurationError(
                f"{MODE_ENV}={mode!r} is not a mode; use 'development' or 'production'"
            )
        if value == "production":
            resolved = "production"
    return resolved


class DevEnvironmentProvider:
    """Reads the identity once, at construction; every `authenticate(DevEnvironment())` returns it.

    `environ` defaults to `os.environ`; `mode` is the mode from settings. Either one saying
    production makes construction fail with `IdentityConfigurationError`.
    """

    def __init__(self, environ: Mapping[str, str] | None = None, *, mode: str | None = None) -> None:
        env = os.environ if environ is None else environ
        if resolve_mode(env.get(MODE_ENV), mode) == "production":
            raise IdentityConfigurationError(PRODUCTION_ADVICE)
        fields: dict[str, object] = {}
        for field_name, (names, default) in _SCALARS.items():
            name, value = _first(env, names)
            if value is None:
                fields[field_name] = default
            else:
                fields[field_name] = _checked(value, name)
        for field_name, name in _LISTS.items():
            raw = env.get(name, "")
            items = [item.strip() for item in raw.split(",") if item.strip()]
            fields[field_name] = frozenset(_checked(item, name) for item in items)
        if fields["session_id"] is None:
            fields["session_id"] = new_session_id()
        self.identity = MemoryIdentity(**fields)

    async def authenticate(self, credential: DevEnvironment) -> MemoryIdentity:
        require_credential(credential, DevEnvironment, "development provider")
        return self.identity


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str | None]:
    for name in names:
        value = env.get(name)
        if value is not None and value != "":  # the plugin ships `VIKING_MEMORY_GROUP_ID=` empty
            return name, value
    return names[0], None


def _checked(value: str, env_name: str) -> str:
    try:
        return validate_id(value, env_name)
    except InvalidIdError as exc:
        raise IdentityConfigurationError(f"{env_name}: {exc}") from None
