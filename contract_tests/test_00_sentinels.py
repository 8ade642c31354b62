"""Sentinels: the fixture must hand every test a FRESH, EMPTY backend (pattern: langchain-tests).

If a factory reuses a store, or forgets to clean its throw-away namespace, the first test sees
nothing wrong — but memories of one test can then "leak" into the next and make both leakage and
no-leakage results meaningless. These three tests run in order: empty, write, still empty.
"""

from __future__ import annotations

import pytest

from adapters.base import SearchQuery, Status
from adapters.scopes import ScopeKey, ScopeSet
from contract_tests.harness import SUITE_TENANTS, ContractEnv

pytestmark = pytest.mark.asyncio

ALL_STATUSES = frozenset(Status)


async def _assert_empty(env: ContractEnv, when: str) -> None:
    backend = env.backend
    for tenant in SUITE_TENANTS:
        if backend.capabilities.list_scopes:
            scopes = list(await backend.list_scopes(tenant))
            assert not scopes, (
                f"GUARANTEE BROKEN: the adapter factory yields an EMPTY backend ({when}); "
                f"tenant {tenant!r} already holds scopes {[str(s) for s in scopes]}. Reproduce: {env.reproduce}"
            )
    probe = [ScopeKey.global_(), ScopeKey.tenant("acme"), ScopeKey.private("acme", "alice"), ScopeKey.workspace("acme", "alpha"), ScopeKey.department("acme", "eng")]
    for key in probe:
        rows = list(await backend.list(key, statuses=ALL_STATUSES))
        assert not rows, (
            f"GUARANTEE BROKEN: the adapter factory yields an EMPTY backend ({when}); scope {key} holds "
            f"{[(m.id, m.content[:40]) for m in rows]}. Reproduce: {env.reproduce}"
        )
    result = await backend.search(SearchQuery(ScopeSet.of(*probe), "sentinel memory written by the contract suite", limit=50, statuses=ALL_STATUSES))
    assert not result.hits, f"GUARANTEE BROKEN: the store is empty {when}; search found {[(str(h.scope), h.memory.id) for h in result.hits]}"


async def test_sentinel_store_is_empty_at_start(contract: ContractEnv) -> None:
    """Guarantee: the adapter factory yields an EMPTY backend (nothing from earlier tests or runs)."""
    await _assert_empty(contract, "at the start of a test")


async def test_sentinel_a_test_that_writes(contract: ContractEnv) -> None:
    """Writes into every kind of scope, so the next sentinel can prove the factory cleans up."""
    ids = contract.ids
    alice = await ids.login("alice", departments=["eng"], workspace="alpha", roles=["admin", "approver", "global_admin"])
    bridge = contract.bridge
    written = [
        await bridge.remember(alice, "sentinel memory written by the contract suite (private)", "preference"),
        await bridge.remember(alice, "sentinel memory written by the contract suite (workspace)", "decision"),
        await bridge.remember(alice, "sentinel memory written by the contract suite (department)", "standard"),
        await bridge.remember(alice, "sentinel memory written by the contract suite (tenant)", "fact", visibility="tenant"),
        await bridge.remember(alice, "sentinel memory written by the contract suite (global)", "fact", visibility="global"),
        await bridge.remember(alice, "sentinel memory written by the contract suite (agent)", "experience"),
    ]
    assert {w.visibility for w in written} == {"private", "workspace", "department", "tenant", "global", "agent"}
    result = await contract.recall(alice, "sentinel memory written by the contract suite", budget_tokens=20000, must_see=[w.memory_id for w in written])
    assert len(result.items) == len(written)


async def test_sentinel_store_still_empty_after_a_test_that_wrote(contract: ContractEnv) -> None:
    """Guarantee: state never leaks between tests — still empty after a test wrote everywhere."""
    await _assert_empty(contract, "after a previous test wrote into every scope")
