"""Erasure on Viking: forget-by-subject leaves no registry record naming the subject."""

from __future__ import annotations

import json
import tempfile

from bridge.facade import MemoryBridge
from contract_tests.backends.viking import make_simulated
from identity.model import MemoryIdentity


def _ident(user: str) -> MemoryIdentity:
    return MemoryIdentity(tenant_id="acme", user_id=user, agent_id="chat", session_id=f"s-acme-{user}")


async def test_forget_subject_removes_capture_records_and_scope_markers():
    sim, backend = make_simulated()
    bridge = MemoryBridge.with_backend(backend, tempfile.mkdtemp(), server_side_extraction=True)
    bob, alice = _ident("bob"), _ident("alice")
    await bridge.capture(bob, [{"role": "user", "content": "My diagnosis is CANARY-illness and I live at 5 Elm St"}])
    await bridge.remember(bob, "bob likes CANARY tea", "preference")
    await bridge.remember(alice, "alice likes green tea", "preference")
    sim.advance(1000)

    def naming_bob() -> list[object]:
        return [e for e in sim.all_events() if "CANARY" in e.text() or "bob" in json.dumps(e.memory_info or {}, ensure_ascii=False)]

    assert naming_bob(), "the scenario must leave traces to erase"
    assert await bridge.forget_subject(bob, "bob") >= 1
    assert naming_bob() == []
    assert any("alice likes green tea" in e.text() for e in sim.all_events()), "erasure touched another user"
    await bridge.aclose()
