"""inject-context's three depths (seed 000 4.2), each a superset of the one before:
minimal = the memories directly about the task; standard = + the project's context (the
parent's current workspace); full = every live memory the parent may hand on (its default
scopes) — and never anything past the parent's own reach or a pending memory (expired memories:
contract_tests/test_lifecycle.py, at depth full)."""

from __future__ import annotations

import pytest

from tests.kit import make_identity

pytestmark = pytest.mark.asyncio

TASK = "backend-dev login endpoint"


@pytest.fixture
async def world(bridge):
    parent = make_identity(agent="tangseng-brain")
    other_ws = make_identity("bob", workspace="beta")
    mem = {
        "task": await bridge.remember(parent, "wukong's task for backend-dev: implement the login endpoint", "procedure", visibility="agent"),
        "task-ws": await bridge.remember(parent, "The login endpoint of backend-dev uses JWT sessions", "fact"),
        "project": await bridge.remember(parent, "Project context: hawk-bridge is a multi-agent memory service", "fact"),
        "decision": await bridge.remember(parent, "Team decision: use Next.js App Router", "decision"),
        "agent-note": await bridge.remember(parent, "Tangseng prefers green tea in the morning", "note", visibility="agent"),
        "tenant": await bridge.remember(make_identity("root", roles=["admin"]), "Acme holidays are listed on the intranet", "fact", visibility="tenant"),
        "pending": await bridge.remember(parent, "Department standard: every query is reviewed", "standard"),
        "expiring": await bridge.remember(parent, "Hawk-bridge staging password rotates daily", "fact", ttl_s=5),
        "other-agent": await bridge.remember(make_identity(agent="coder"), "Coder's private login endpoint notes for backend-dev", "procedure", visibility="agent"),
        "other-ws": await bridge.remember(other_ws, "Project beta: backend-dev login endpoint uses OAuth", "fact"),
    }
    return bridge, parent, mem


async def _depth(bridge, parent, depth: str) -> set[str]:
    answer = await bridge.inject_context(parent, "wukong", TASK, depth=depth)
    assert answer.depth == depth and answer.source == "injected_by_tangseng-brain"
    return {m.memory_id for m in answer.memories}


async def test_minimal_is_only_the_memories_about_the_task(world):
    bridge, parent, mem = world
    got = await _depth(bridge, parent, "minimal")
    assert mem["task"].memory_id in got
    assert not got & {mem[k].memory_id for k in ("project", "decision", "agent-note", "tenant")}, "minimal carries nothing unrelated to the task"


async def test_standard_adds_the_project_context_and_nothing_else(world):
    bridge, parent, mem = world
    minimal, got = await _depth(bridge, parent, "minimal"), await _depth(bridge, parent, "standard")
    assert minimal <= got
    assert {mem[k].memory_id for k in ("task", "task-ws", "project", "decision")} <= got, "the workspace's memories are the project context"
    assert not got & {mem[k].memory_id for k in ("agent-note", "tenant")}, "standard stops at the project"


async def test_full_is_everything_the_parent_may_hand_on_and_nothing_past_it(world):
    bridge, parent, mem = world
    standard, got = await _depth(bridge, parent, "standard"), await _depth(bridge, parent, "full")
    assert standard <= got
    assert {mem[k].memory_id for k in ("task", "task-ws", "project", "decision", "agent-note", "tenant", "expiring")} <= got
    assert not got & {mem[k].memory_id for k in ("pending", "other-agent", "other-ws")}, "never a pending memory, another agent's or another workspace's"

