"""Test kit of the LangGraph store: identities from real API keys (`Keys.login`)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from identity.model import MemoryIdentity
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore

__all__ = ["Keys"]


class Keys:
    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.store = ApiKeyStore(home / "keys.sqlite3")
        self.provider = ApiKeyProvider(self.store)

    def issue(self, user: str, *, tenant: str = "acme", agent: str = "assistant", departments: Iterable[str] = (), workspace: str | None = None, roles: Iterable[str] = ()) -> str:
        return self.store.issue(tenant_id=tenant, user_id=user, agent_id=agent, department_ids=departments, workspace_id=workspace, roles=roles, label="langgraph-tests").key

    async def login(self, user: str, **kwargs: object) -> MemoryIdentity:
        return await self.provider.authenticate(ApiKey(self.issue(user, **kwargs)))  # type: ignore[arg-type]

    def close(self) -> None:
        self.store.close()
