"""Bridge configuration (pydantic-settings, env prefix `VIKING_BRIDGE_`).

    VIKING_BRIDGE_HOME            data directory of the local store and the bridge's own state
                                  (audit, grants, manifests, sessions); default: the per-user data
                                  directory, e.g. ~/.local/share/viking-bridge on Linux
    VIKING_BRIDGE_MAX_QUERY_CHARS, VIKING_BRIDGE_MAX_CONTENT_CHARS, VIKING_BRIDGE_CANDIDATE_LIMIT
    VIKING_BRIDGE_BUDGET_TOKENS   default token budget of a recall
    VIKING_BRIDGE_AUDIT_FSYNC_READS  fsync each recall's audit row too (default: writes only)

Identity settings (provider, mode, keys) live in `identity.settings` under the same prefix.
A bad value fails at start-up with the setting's name.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from bridge.recall.budget import BudgetConfig
from bridge.errors import InvalidInput
from bridge.limits import Limits


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("viking-bridge", appauthor=False))


class BridgeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIKING_BRIDGE_", extra="ignore", frozen=True)

    home: Path = Field(default_factory=default_home)
    max_query_chars: int = Field(4000, ge=1, le=100_000)
    max_content_chars: int = Field(8000, ge=1, le=1_000_000)
    candidate_limit: int = Field(50, ge=1, le=5000)
    budget_tokens: int = Field(1200, ge=25, le=200_000)
    audit_fsync_reads: bool = False  # fsync every recall's audit row (see bridge/audit.py)

    def limits(self) -> Limits:
        return Limits(max_query_chars=self.max_query_chars, max_content_chars=self.max_content_chars, candidate_limit=self.candidate_limit)

    def budget(self) -> BudgetConfig:
        return BudgetConfig(max_tokens=self.budget_tokens)


def load_bridge_settings() -> BridgeSettings:
    try:
        return BridgeSettings()
    except ValidationError as exc:
        problems = "; ".join(f"VIKING_BRIDGE_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors())
        raise InvalidInput(f"invalid configuration: {problems}") from None
