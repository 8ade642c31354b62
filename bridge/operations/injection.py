"""Inject, RevokeManifest and WriteBack: a parent agent's manifest for a child, and the child's results written back with their lineage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput
from bridge.operations.base import Operation, _set
from bridge.operations.limits import Limits
from bridge.state.records import InjectDepth
from bridge.operations.fields import (
    check_metadata, flag, ident, kind, memory_ref, metadata, optional_ident,
    sequence, shown, text, visibility, within,
)
from bridge.vocabulary import Kind



@dataclass(frozen=True, slots=True, kw_only=True)
class Inject(Operation):
    """Hand `child_agent_id` (same tenant and user) a read-only manifest of memories."""

    child_agent_id: str
    task: str
    depth: InjectDepth = InjectDepth.STANDARD
    memory_refs: tuple[tuple[ScopeKey, str], ...] | None = None
    from_manifest_id: str | None = None
    ttl_seconds: float = 3600
    may_reinject: bool = False

    MAX_TTL_SECONDS: ClassVar[int] = 7 * 86400

    def __post_init__(self) -> None:
        _set(self, "child_agent_id", ident(self.child_agent_id, "child_agent_id"))
        _set(self, "task", text(self.task, "task"))
        try:
            _set(self, "depth", InjectDepth(self.depth))
        except ValueError:
            raise InvalidInput(f"unknown depth {shown(self.depth)}; expected minimal, standard or full") from None
        if self.memory_refs is not None:
            _set(self, "memory_refs", tuple(memory_ref(r) for r in sequence(self.memory_refs, "memory_refs")))
        _set(self, "from_manifest_id", optional_ident(self.from_manifest_id, "from_manifest_id"))
        ttl = self.ttl_seconds
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= self.MAX_TTL_SECONDS:
            raise InvalidInput(f"ttl_seconds must be within (0, {self.MAX_TTL_SECONDS}]; a manifest is for one task")
        _set(self, "may_reinject", flag(self.may_reinject, "may_reinject"))

    def check(self, limits: Limits) -> None:
        within(self.task, "task", limits.max_query_chars)
        if self.memory_refs is not None and len(self.memory_refs) > limits.max_memory_refs:
            raise InvalidInput(f"memory_refs names {len(self.memory_refs)} memories; the limit is {limits.max_memory_refs}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RevokeManifest(Operation):
    """End a manifest and every manifest derived from it."""

    manifest_id: str

    def __post_init__(self) -> None:
        _set(self, "manifest_id", ident(self.manifest_id, "manifest_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteBack(Operation):
    """A child's result, stored with `derived_from` = the injected memory ids (lineage)."""

    manifest_id: str
    content: str
    kind: Kind
    visibility: Visibility | None = None
    idempotency_key: str | None = None
    #: the caller's metadata for the result, e.g. the `domain` and `tier` role files route by
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _set(self, "manifest_id", ident(self.manifest_id, "manifest_id"))
        _set(self, "content", text(self.content, "content"))
        _set(self, "kind", kind(self.kind))
        _set(self, "visibility", visibility(self.visibility))
        _set(self, "idempotency_key", optional_ident(self.idempotency_key, "idempotency_key"))
        _set(self, "metadata", metadata(self.metadata))

    def check(self, limits: Limits) -> None:
        within(self.content, "content", limits.max_content_chars)
        check_metadata(self.metadata, limits)
