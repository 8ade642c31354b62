"""A memory's edit history leaves reads out (bridge/policy/reads.py `HISTORY_HIDDEN_ACTIONS`):
who recalled a memory is not a change to it. Through the bridge, on the local store."""

from __future__ import annotations

from bridge import operations as ops
from bridge.facade import MemoryBridge
from tests.kit import make_identity

ALICE = make_identity("alice")


async def test_a_memorys_history_lists_its_changes_and_not_who_recalled_it(tmp_path):
    bridge = MemoryBridge.open_local(tmp_path / "home")
    try:
        written = await bridge.remember(ALICE, "the deploy runs with make ship", "fact", visibility="workspace")
        found = await bridge.recall(ALICE, "how does the deploy run")
        assert written.memory_id in {item.memory_id for item in found.items}, "the recall must have read it, or the test proves nothing"
        await bridge.execute(ALICE, ops.EditMemory(ref=written.ref, content="the deploy runs with make release"))
        history = await bridge.execute(ALICE, ops.MemoryHistory(memory_id=written.memory_id))
        assert [c.action for c in history.changes] == ["edit", "write"]
        recalls = await bridge.execute(ALICE, ops.QueryAudit(action="recall", memory_id=written.memory_id))
        assert len(list(recalls)) == 1, "the recall is on the record, only not in the history"
    finally:
        await bridge.aclose()
