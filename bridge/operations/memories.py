"""Remember and Capture: the two ways a memory is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from adapters.scopes import Visibility
from bridge.errors import InvalidInput
from bridge.operations.base import Operation, _set
from bridge.operations.limits import Limits
from bridge.results import Message
from bridge.operations.fields import memory_type_field, visible_to_field
from bridge.operations.fields import (
    MAX_TTL_S, check_metadata, expiry, kind, message, metadata, number, optional_ident, optional_team_ident,
    sequence, text, visibility, within,
)
from bridge.vocabulary import Kind



@dataclass(frozen=True, slots=True, kw_only=True)
class Remember(Operation):
    """Store an explicit memory. Where it lands is decided by the policy from the identity.

    Seed 000: `memory_type` "team" writes the team `team_id` (members only),
    "private" the agent's own place; `visible_to` names other agents of the same user that may
    read a private memory (`["*"]`: all of them) — see bridge/policy/sharing.py.

    `expires_at` (epoch seconds) or `ttl_s` (seconds from the bridge's clock; what LangGraph's
    store TTL maps to) makes it expire: from then on it is never a candidate of any search, and
    the purge (`PurgeExpired`) deletes it. At most one of the two; both bounded by `MAX_TTL_S`.
    """

    content: str
    kind: Kind
    visibility: Visibility | None = None
    department_id: str | None = None
    idempotency_key: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    confidence: float = 1.0
    memory_type: str | None = None
    visible_to: tuple[str, ...] | None = None
    team_id: str | None = None
    expires_at: float | None = None
    ttl_s: float | None = None

    MAX_TTL_S: ClassVar[float] = MAX_TTL_S

    def __post_init__(self) -> None:
        _set(self, "memory_type", memory_type_field(self.memory_type))
        _set(self, "visible_to", visible_to_field(self.visible_to))
        _set(self, "team_id", optional_team_ident(self.team_id, "team_id"))
        _set(self, "content", text(self.content, "content"))
        _set(self, "kind", kind(self.kind))
        _set(self, "visibility", visibility(self.visibility))
        _set(self, "department_id", optional_ident(self.department_id, "department_id"))
        _set(self, "idempotency_key", optional_ident(self.idempotency_key, "idempotency_key"))
        _set(self, "metadata", metadata(self.metadata))
        _set(self, "confidence", number(self.confidence, "confidence", 0.0, 1.0))
        _set(self, "expires_at", expiry(self.expires_at, self.ttl_s)[0])
        _set(self, "ttl_s", expiry(self.expires_at, self.ttl_s)[1])

    def check(self, limits: Limits) -> None:
        within(self.content, "content", limits.max_content_chars)
        check_metadata(self.metadata, limits)


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture(Operation):
    """Conversation -> memories. Message text is data: it cannot change scope or identity.

    `content` (seed 000's capture) is the calling agent's own memory, stored whole: private to
    that agent unless `memory_type` / `visible_to` / `team_id` say otherwise. `messages` is a
    conversation, from which memories are extracted and routed by seed 003's write rules."""

    messages: tuple[Message, ...]
    idempotency_key: str | None = None
    memory_type: str | None = None  # as for Remember: where every extracted memory lands
    visible_to: tuple[str, ...] | None = None
    team_id: str | None = None
    #: Expiry of every memory this capture extracts (see `Remember`); a capture the backend
    #: extracts server-side cannot carry it and is refused with one set.
    expires_at: float | None = None
    ttl_s: float | None = None
    content: str | None = None

    def __post_init__(self) -> None:
        _set(self, "memory_type", memory_type_field(self.memory_type))
        _set(self, "visible_to", visible_to_field(self.visible_to))
        _set(self, "team_id", optional_team_ident(self.team_id, "team_id"))
        _set(self, "expires_at", expiry(self.expires_at, self.ttl_s)[0])
        _set(self, "ttl_s", expiry(self.expires_at, self.ttl_s)[1])
        if self.content is not None:
            _set(self, "content", text(self.content, "content"))
        messages = tuple(message(m) for m in sequence(self.messages, "messages"))
        if not messages and self.content is None:
            raise InvalidInput("capture needs content or at least one message")
        for m in messages:
            text(m.content, "message content")
            optional_ident(m.message_id, "message_id")
        _set(self, "messages", messages)
        _set(self, "idempotency_key", optional_ident(self.idempotency_key, "idempotency_key"))

    def check(self, limits: Limits) -> None:
        if len(self.messages) > limits.max_messages:
            raise InvalidInput(f"capture got {len(self.messages)} messages; the limit is {limits.max_messages}")
        for m in self.messages:
            within(m.content, "message content", limits.max_content_chars)
        if self.content is not None:
            within(self.content, "content", limits.max_content_chars)
