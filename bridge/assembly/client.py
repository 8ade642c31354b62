"""Client-mode settings of the CLI: which running service to talk to, and with what credential.

`VIKING_BRIDGE_URL` and `VIKING_BRIDGE_API_KEY` (or `VIKING_BRIDGE_TOKEN`, a JWT) let a user
keep the key out of the command line and so out of shell history; a flag given on the command
line wins over the environment. Read here, beside `BridgeSettings`, because nothing outside
`bridge/assembly/` reads the bridge's `VIKING_BRIDGE_*` variables. The credentials are
`SecretStr`, so no repr or error message of these settings shows them.
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ClientSettings", "client_settings"]


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIKING_BRIDGE_", extra="ignore", frozen=True)

    url: str | None = Field(None, description="the service's base URL, e.g. http://127.0.0.1:8080")
    api_key: SecretStr | None = None
    token: SecretStr | None = None


def client_settings() -> ClientSettings:
    """The client-mode settings from the environment (an empty variable counts as unset)."""
    s = ClientSettings()
    return ClientSettings(
        url=s.url or None,
        api_key=s.api_key if s.api_key and s.api_key.get_secret_value() else None,
        token=s.token if s.token and s.token.get_secret_value() else None,
    )
