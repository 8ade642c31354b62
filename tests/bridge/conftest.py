from __future__ import annotations

import pytest

from bridge import MemoryBridge
from identity import MemoryIdentity


def _make_identity(user: str = "alice", *, tenant: str = "acme", agent: str = "assistant", departments=("eng",), workspace: str | None = "alpha", roles=(), session: str | None = None) -> MemoryIdentity:
    return MemoryIdentity(
        tenant_id=tenant,
        user_id=user,
        agent_id=agent,
        department_ids=frozenset(departments),
        workspace_id=workspace,
        roles=frozenset(roles),
        session_id=session or f"s-{tenant}-{user}-{agent}",
    )


@pytest.fixture
async def bridge(tmp_path):
    b = MemoryBridge.open_local(tmp_path / "home")
    yield b
    await b.aclose()


@pytest.fixture
def make_identity():
    """Hand-built identities: these unit tests check the bridge, not the providers."""
    return _make_identity
