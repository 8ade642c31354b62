"""The shared test kit: hand-built identities for unit tests of the layers below the providers.

Unit tests of the bridge and the adapters need a `MemoryIdentity` without standing up a
credential flow; `make_identity` builds one with the defaults most tests share (tenant `acme`,
department `eng`, workspace `alpha`) and a session id derived from who is asking, so two
identities never share a session by accident. Import it as `from tests.kit import make_identity`.

Never use it in `contract_tests/`: the contract suite gets every identity from a real credential
(`contract_tests.harness.Identities`), as production does. Identity-provider tests have their
own kit (`tests.identity.idtestkit`: signing keys, a JWKS server, a fake clock).
"""

from __future__ import annotations

from typing import Iterable

from identity import MemoryIdentity

__all__ = ["make_identity"]


def make_identity(
    user: str = "alice",
    *,
    tenant: str = "acme",
    agent: str = "assistant",
    departments: Iterable[str] = ("eng",),
    workspace: str | None = "alpha",
    roles: Iterable[str] = (),
    session: str | None = None,
) -> MemoryIdentity:
    """A hand-built identity (these tests check the bridge or an adapter, not the providers)."""
    return MemoryIdentity(
        tenant_id=tenant,
        user_id=user,
        agent_id=agent,
        department_ids=frozenset(departments),
        workspace_id=workspace,
        roles=frozenset(roles),
        session_id=session or f"s-{tenant}-{user}-{agent}",
    )
