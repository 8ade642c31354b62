"""`RoleInject`: federated injection as an operation (seed 002's coordinator turn), and its result.

Run by `MemoryBridge.execute` (so session checks, limits and the `denied` audit of refusals
apply); the handler is `bridge/handlers/roles.py`; the friendly call is
`MemoryBridge.role_inject(parent, child, task, depth)`. Like every operation: no field names the
caller, and every value is validated when it is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.operations.limits import Limits
from bridge.operations.base import Operation
from bridge.operations.injection import Inject
from bridge.operations.sharing import _set
from bridge.state.records import InjectDepth
from bridge.operations.fields import flag, ident, memory_ref, sequence, shown, text, within

__all__ = ["RoleInject", "FederatedManifest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleInject(Operation):
    """Inject into `child_agent_id` the manifest its role calls for (depth: the role's if None).

    `carry`: refs passed on explicitly on top of the plan (seed 002: a queued write-back, e.g.
    a veto, handed to the agent that retries); each is checked like any injected ref."""

    child_agent_id: str
    task: str
    depth: InjectDepth | None = None
    carry: tuple[tuple[ScopeKey, str], ...] = ()
    ttl_seconds: float = 3600
    may_reinject: bool = False

    def __post_init__(self) -> None:
        _set(self, "child_agent_id", ident(self.child_agent_id, "child_agent_id"))
        _set(self, "task", text(self.task, "task"))
        if self.depth is not None:
            try:
                _set(self, "depth", InjectDepth(self.depth))
            except ValueError:
                raise InvalidInput(f"unknown depth {shown(self.depth)}; expected minimal, standard or full") from None
        _set(self, "carry", tuple(memory_ref(r) for r in sequence(self.carry, "carry")))
        _set(self, "may_reinject", flag(self.may_reinject, "may_reinject"))
        Inject(child_agent_id=self.child_agent_id, task=self.task, ttl_seconds=self.ttl_seconds)  # the same ttl rule as Inject

    def check(self, limits: Limits) -> None:
        within(self.task, "task", limits.max_query_chars)
        if len(self.carry) > limits.max_memory_refs:
            raise InvalidInput(f"carry names {len(self.carry)} memories; the limit is {limits.max_memory_refs}")


