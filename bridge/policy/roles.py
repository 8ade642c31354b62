"""What the role file permits, as pure functions of an identity and the loaded roles.

    check_inject      the parent has a role and lists the child (or "*") in `may_inject_into`;
                      a re-injection (from a manifest) also needs the parent's `may_reinject`;
                      handing the child `may_reinject` needs the child's role to allow it
    check_write_back  a child's write-back lands in one of its `write_layers`, of an allowed kind

Fail closed: once a role file is loaded, an agent without a role may not inject. These checks
come on top of the policy's (`Policy.check_inject`: never into itself; a re-injection needs a
manifest that allows it) — they can only refuse more, never allow what the policy refuses.
"""

from __future__ import annotations

from bridge.errors import RoleRefused
from bridge.roles.book import RoleBook
from bridge.roles.model import ANY_AGENT
from identity.model import MemoryIdentity

__all__ = ["check_inject", "check_write_back"]


def check_inject(book: RoleBook, parent: MemoryIdentity, child_agent_id: str, *, reinjection: bool, grants_reinject: bool) -> None:
    role = book.role_of(parent.agent_id)
    targets = role.may_inject_into
    if ANY_AGENT not in targets and child_agent_id not in targets:
        raise RoleRefused(f"agent {parent.agent_id!r} may not inject into {child_agent_id!r} (agents.{parent.agent_id}.may_inject_into in {book.where()})")
    if reinjection and not role.may_reinject:
        raise RoleRefused(f"agent {parent.agent_id!r} may not pass on injected memories (agents.{parent.agent_id}.may_reinject is false in {book.where()})")
    if grants_reinject and not book.role_of(child_agent_id).may_reinject:
        raise RoleRefused(f"agent {child_agent_id!r} may not re-inject (agents.{child_agent_id}.may_reinject is false), so its manifest cannot allow it")


def check_write_back(book: RoleBook, child: MemoryIdentity, layer: str, kind: str) -> None:
    role = book.role_of(child.agent_id)
    if layer not in role.write_layers:
        raise RoleRefused(f"agent {child.agent_id!r} may not write back into the {layer} layer (agents.{child.agent_id}.write_layers = {list(role.write_layers)})")
    if role.allowed_kinds is not None and kind not in {k.value for k in role.allowed_kinds}:
        raise RoleRefused(f"agent {child.agent_id!r} may not write back a {kind} (agents.{child.agent_id}.allowed_kinds)")
