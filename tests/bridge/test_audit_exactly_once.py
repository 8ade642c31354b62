"""Every acknowledged memory is audited exactly once, however many attempts its write took.

Retries are where a second row slips in: a deduplicated retry of an audited write, or a retry
after a retryable backend error (the first attempt's intent stays open and the next open
would find the memory by its key and audit it again as `recovered`). The write path audits a
stored memory through `append_stored`, which closes every open intent of the same write and
adds a row only for a memory that has none.
"""

from __future__ import annotations

import pytest

from adapters.errors import BackendUnavailable
from adapters.scopes import ScopeKey
from bridge import MemoryBridge
from bridge.writes import backend_key
from bridge.writes.recovery import reconcile_intents
from tests.kit import make_identity

ALICE = make_identity()
ADMIN = make_identity("dave", roles=("admin",))
PRIVATE = ScopeKey.private("acme", "alice")
STORED = ("write", "promote", "recovered")


async def _rows_naming(b: MemoryBridge, memory_id: str) -> list:
    return [e for e in await b.audit_events(ADMIN, limit=1000) if memory_id in e.memory_ids and e.action in STORED]


@pytest.fixture
async def bridge(tmp_path):
    b = MemoryBridge.open_local(tmp_path / "home")
    yield b
    await b.aclose()


async def test_a_deduplicated_retry_adds_no_second_write_row(bridge):
    first = await bridge.remember(ALICE, "the deploy runs on Fridays", "fact", idempotency_key="req-1")
    again = await bridge.remember(ALICE, "the deploy runs on Fridays", "fact", idempotency_key="req-1")
    assert again.deduplicated and again.memory_id == first.memory_id
    assert len(await _rows_naming(bridge, first.memory_id)) == 1
    assert await bridge.state.audit.open_intents() == []


def _fail_once_after_landing(b: MemoryBridge, *, landed: bool) -> None:
    """The backend's next put raises a retryable error — after storing (`landed`: the answer
    was lost on the way back) or before."""
    real_put = b.backend.put
    calls = {"n": 0}

    async def put(scope, memory, *, idempotency_key=None):
        calls["n"] += 1
        if calls["n"] == 1:
            if landed:
                await real_put(scope, memory, idempotency_key=idempotency_key)
            raise BackendUnavailable("connection reset after the request was sent", backend=b.backend.name)
        return await real_put(scope, memory, idempotency_key=idempotency_key)

    b.backend.put = put  # type: ignore[method-assign]


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "not-landed"])
async def test_a_retry_after_a_retryable_error_is_audited_once_and_open_checks_add_nothing(bridge, landed):
    _fail_once_after_landing(bridge, landed=landed)
    with pytest.raises(BackendUnavailable):
        await bridge.remember(ALICE, "the staging database is pg-2", "fact", idempotency_key="req-2")
    assert len(await bridge.state.audit.open_intents()) == 1, "premise: the failed attempt left its intent open"
    retry = await bridge.remember(ALICE, "the staging database is pg-2", "fact", idempotency_key="req-2")
    assert retry.deduplicated is landed
    assert await bridge.state.audit.open_intents() == [], "the retry's row closes the earlier attempt's intent"
    assert await reconcile_intents(bridge.runtime) == 0
    assert len(await _rows_naming(bridge, retry.memory_id)) == 1


async def test_open_checks_do_not_re_audit_a_memory_a_retry_already_audited(bridge):
    # an intent left open by an earlier version (or a replica) for a memory that has its row
    stored = await bridge.remember(ALICE, "the on-call rota is weekly", "note", idempotency_key="req-3")
    key = backend_key(ALICE, PRIVATE, "req-3", "")
    await bridge.state.audit.begin_intent(ALICE, "write", PRIVATE, key)
    await reconcile_intents(bridge.runtime)
    assert await bridge.state.audit.open_intents() == []
    assert len(await _rows_naming(bridge, stored.memory_id)) == 1


async def test_a_crashed_first_attempt_then_a_deduplicated_retry_is_audited_once(bridge):
    # the first attempt stored the memory and died before its row; the retry deduplicates and
    # must audit it (it has no row yet), closing the first attempt's intent with that one row
    real = bridge.state.audit.append_stored

    async def crash(*args, **kwargs):
        raise KeyboardInterrupt

    bridge.state.audit.append_stored = crash  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        await bridge.remember(ALICE, "the VPN needs a token", "fact", idempotency_key="req-4")
    bridge.state.audit.append_stored = real  # type: ignore[method-assign]
    retry = await bridge.remember(ALICE, "the VPN needs a token", "fact", idempotency_key="req-4")
    assert retry.deduplicated
    assert await bridge.state.audit.open_intents() == []
    assert await reconcile_intents(bridge.runtime) == 0
    assert len(await _rows_naming(bridge, retry.memory_id)) == 1
