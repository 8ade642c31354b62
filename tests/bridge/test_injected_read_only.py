"""Injected memories are read-only to the child (seed 000 4.3, docs/security.md).

The child agent acts for the same user as its parent, so deciding by "did this user write
it" lets a child edit or delete a private memory, or a workspace memory the user wrote through
the parent, that was injected into it. The rule is decided by the manifest
(`Policy.check_not_injected`) and applied by `MemoryBridge.execute` to every operation that
changes a memory by reference (`Operation.changes_ref`).
"""

from __future__ import annotations

import dataclasses

import pytest

from bridge.errors import NotPermitted
from bridge.handlers import HANDLERS
from tests.kit import make_identity

PARENT = make_identity("alice", agent="assistant")
CHILD = make_identity("alice", agent="worker", roles=("approver",))
ADMIN_CHILD = make_identity("alice", agent="worker", roles=("admin",))


@pytest.fixture
async def injected(bridge):
    private = await bridge.remember(PARENT, "my home address is 1 Main St", "note")
    workspace = await bridge.remember(PARENT, "the API is deployed by make ship", "fact", visibility="workspace")
    assert private.scope.startswith("acme/user/") and workspace.scope == "acme/ws/alpha"
    await bridge.inject(PARENT, "worker", "ship it", memory_refs=[private.ref, workspace.ref])
    return private, workspace


def _mutations(bridge, ref):
    return {
        "edit": lambda who: bridge.edit_memory(who, ref, content="rewritten by the child"),
        "forget": lambda who: bridge.forget(who, ref),
        "promote": lambda who: bridge.promote(who, ref, "tenant"),
        "approve": lambda who: bridge.approve(who, ref),
        "reject": lambda who: bridge.reject(who, ref),
    }


@pytest.mark.parametrize("which", ["private", "workspace"])
@pytest.mark.parametrize("operation", ["edit", "forget", "promote", "approve", "reject"])
@pytest.mark.parametrize("child", [CHILD, ADMIN_CHILD], ids=["member", "admin"])
async def test_the_child_cannot_change_an_injected_memory(bridge, injected, which, operation, child):
    memory = dict(zip(("private", "workspace"), injected))[which]
    with pytest.raises(NotPermitted, match="injected"):
        await _mutations(bridge, memory.ref)[operation](child)
    got = await bridge.get_memory(PARENT, memory.ref)  # still there, unchanged
    assert got.content == {"private": "my home address is 1 Main St", "workspace": "the API is deployed by make ship"}[which]


def test_the_policy_refuses_only_the_agent_the_manifest_was_issued_to():
    from adapters.scopes import ScopeKey
    from bridge.policy import Policy
    from bridge.state.records import InjectDepth, InjectionManifest

    key = ScopeKey.agent("acme", "worker", "alice")
    manifest = InjectionManifest("m1", "acme", "alice", "assistant", "worker", "t", InjectDepth.MINIMAL, ((key, "x"),), False, 0.0, 9e12)
    policy = Policy()
    with pytest.raises(NotPermitted, match="injected"):
        policy.check_not_injected(make_identity("alice", agent="worker"), key, "x", [manifest])
    policy.check_not_injected(make_identity("alice", agent="assistant"), key, "x", [manifest])  # the parent
    policy.check_not_injected(make_identity("bob", agent="worker"), key, "x", [manifest])  # another user's worker
    policy.check_not_injected(make_identity("alice", agent="worker"), key, "y", [manifest])  # another memory


async def test_the_parent_and_other_agents_still_may_change_it(bridge, injected):
    private, workspace = injected
    await bridge.edit_memory(PARENT, private.ref, content="my home address is 2 Main St")
    assert await bridge.forget(make_identity("alice", agent="other"), workspace.ref)


async def test_a_memory_not_injected_into_the_child_is_unaffected(bridge, injected):
    mine = await bridge.remember(PARENT, "not handed to the worker", "note")
    await bridge.edit_memory(CHILD, mine.ref, content="the worker may still edit what was not injected")


def test_every_operation_naming_a_memory_says_whether_it_changes_it():
    """A new operation with a `ref` must decide: changes_ref=True (the injected rule applies)
    or listed here as read-only."""
    read_only = {"GetMemory", "WhoCanRead"}
    undecided = []
    for op in HANDLERS:
        fields = {f.name for f in dataclasses.fields(op)} if dataclasses.is_dataclass(op) else set()
        if "ref" not in fields:
            continue
        if not op.changes_ref and op.__name__ not in read_only:
            undecided.append(op.__name__)
    assert not undecided, f"operations with a ref that neither change it nor are listed read-only: {undecided}"
    changing = {op.__name__ for op in HANDLERS if getattr(op, "changes_ref", False)}
    assert {"Forget", "EditMemory", "Promote", "Approve", "Reject", "SetVisibleTo"} <= changing
