"""Every operation of the bridge as data (pattern: LangGraph's GetOp/PutOp/SearchOp).

Each operation is a frozen dataclass validated at construction: types, enums, id grammar,
references, metadata and text encodability are checked in `__post_init__` (an `InvalidInput`
naming the field); size limits, which are configuration, in `check(limits)`. None of them has
a field that names the caller: identity is the other argument of `MemoryBridge.execute`, built
from a credential, so a door that maps a request body onto an operation cannot smuggle one in.
Fields that name a *target* (a grantee, a child agent, a subject) are decided by the policy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput
from bridge.limits import Limits
from bridge.models import Message
from bridge.sharing_fields import memory_type_field, visible_to_field
from bridge.state.records import AUDIT_ACTIONS, InjectDepth
from bridge.validation import (
    MAX_TTL_S, RESERVED_METADATA_PREFIX, check_metadata, expiry, flag, ident, kind, memory_ref, message, metadata, number, optional_ident,
    positive_int, purpose, scope_key, sequence, shown, text, visibility, within,
)
from bridge.vocabulary import Kind, Purpose

__all__ = [
    "Operation", "Recall", "Remember", "Capture", "Forget", "ForgetSubject", "Approve", "Promote",
    "IssueGrant", "RevokeGrant", "Inject", "RevokeManifest", "WriteBack", "QueryAudit",
    "StartSession", "ForkSession", "PurgeExpired", "RESERVED_METADATA_PREFIX",
]

def _set(op: object, name: str, value: object) -> None:
    object.__setattr__(op, name, value)


class Operation:
    """Base of every operation; `operation_name()` names it in refusals and logs."""

    __slots__ = ()
    #: False for the two operations that establish the session binding themselves.
    continues_session: ClassVar[bool] = True

    def check(self, limits: Limits) -> None:
        """Size limits (configuration); types and grammar were checked at construction."""

    @classmethod
    def operation_name(cls) -> str:
        """`forget_subject` for ForgetSubject: how refusals and logs name the operation."""
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("_")


@dataclass(frozen=True, slots=True)
class Recall(Operation):
    """Ranked, budgeted, labelled memories the identity may read for `query`.

    `include_scopes`: scopes outside the default set, each covered by an active grant (else
    `NotPermitted`). `manifest_id`: an injection manifest issued to this agent. `allow_partial`:
    return what succeeded, marked partial, instead of raising when a scope fails. `min_score`:
    drop memories ranking below it (default: the bridge's relevance floor). `only_scopes`: narrow
    the search to exactly these scopes, each already readable (a default scope, an active grant,
    or the manifest's); it never widens: a scope not readable is `NotPermitted`, an empty tuple
    `InvalidInput`.
    """

    query: str
    purpose: Purpose = Purpose.CHAT
    budget_tokens: int | None = None
    kinds: frozenset[str] | None = None
    include_scopes: tuple[ScopeKey, ...] = ()
    manifest_id: str | None = None
    allow_partial: bool = False
    min_score: float | None = None
    only_scopes: tuple[ScopeKey, ...] | None = None

    def __post_init__(self) -> None:
        _set(self, "query", text(self.query, "query"))
        _set(self, "purpose", purpose(self.purpose))
        if self.budget_tokens is not None:
            _set(self, "budget_tokens", positive_int(self.budget_tokens, "budget_tokens", 1_000_000))
        if self.kinds is not None:
            kinds = frozenset(kind(k).value for k in sequence(self.kinds, "kinds"))
            if not kinds:
                raise InvalidInput("kinds, when given, must name at least one kind")
            _set(self, "kinds", kinds)
        _set(self, "include_scopes", tuple(scope_key(s, "include_scopes") for s in sequence(self.include_scopes, "include_scopes")))
        _set(self, "manifest_id", optional_ident(self.manifest_id, "manifest_id"))
        _set(self, "allow_partial", flag(self.allow_partial, "allow_partial"))
        if self.min_score is not None:
            _set(self, "min_score", number(self.min_score, "min_score", 0.0, 1.0))
        if self.only_scopes is not None:
            only = tuple(dict.fromkeys(scope_key(s, "only_scopes") for s in sequence(self.only_scopes, "only_scopes")))
            if not only:
                raise InvalidInput("only_scopes, when given, must name at least one scope (omit it to search every readable scope)")
            _set(self, "only_scopes", only)

    def check(self, limits: Limits) -> None:
        within(self.query, "query", limits.max_query_chars)
        if len(self.include_scopes) > limits.max_extra_scopes:
            raise InvalidInput(f"include_scopes names {len(self.include_scopes)} scopes; the limit is {limits.max_extra_scopes}")
        if self.only_scopes is not None and len(self.only_scopes) > limits.max_extra_scopes:
            raise InvalidInput(f"only_scopes names {len(self.only_scopes)} scopes; the limit is {limits.max_extra_scopes}")


@dataclass(frozen=True, slots=True)
class Remember(Operation):
    """Store an explicit memory. Where it lands is decided by the policy from the identity.

    Seed 000 (issue 13): `memory_type` "team" writes the team `team_id` (members only),
    "private" the agent's own place; `visible_to` names other agents of the same user that may
    read a private memory (`["*"]`: all of them) — see bridge/sharing_policy.py.

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
        _set(self, "team_id", optional_ident(self.team_id, "team_id"))
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


@dataclass(frozen=True, slots=True)
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
        _set(self, "team_id", optional_ident(self.team_id, "team_id"))
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


@dataclass(frozen=True, slots=True)
class _RefOperation(Operation):
    ref: tuple[ScopeKey, str]

    def __post_init__(self) -> None:
        _set(self, "ref", memory_ref(self.ref))


@dataclass(frozen=True, slots=True)
class Forget(_RefOperation):
    """Hard-delete one memory (record, vector, manifests referencing it) and audit it."""



@dataclass(frozen=True, slots=True)
class Approve(_RefOperation):
    """Activate a pending memory (department standard, promotion proposal)."""



@dataclass(frozen=True, slots=True)
class Promote(Operation):
    """Widen a memory's visibility: admins directly, anyone else files a pending proposal."""

    ref: tuple[ScopeKey, str]
    to: Visibility
    department_id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "ref", memory_ref(self.ref))
        to = visibility(self.to)
        if to is None:
            raise InvalidInput("promote needs a target visibility")
        _set(self, "to", to)
        _set(self, "department_id", optional_ident(self.department_id, "department_id"))


@dataclass(frozen=True, slots=True)
class ForgetSubject(Operation):
    """Erase every memory by or about one user in the caller's tenant (GDPR erasure)."""

    subject_user_id: str

    def __post_init__(self) -> None:
        _set(self, "subject_user_id", ident(self.subject_user_id, "subject_user_id"))


@dataclass(frozen=True, slots=True)
class IssueGrant(Operation):
    """Let one user (optionally one agent) read one scope of the tenant until it expires."""

    grantee_user_id: str
    scope: ScopeKey
    ttl_seconds: float
    reason: str
    grantee_agent_id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "grantee_user_id", ident(self.grantee_user_id, "grantee_user_id"))
        _set(self, "scope", scope_key(self.scope))
        _set(self, "ttl_seconds", number(self.ttl_seconds, "ttl_seconds", 0.0, float(2**31)))
        _set(self, "reason", text(self.reason, "reason"))
        _set(self, "grantee_agent_id", optional_ident(self.grantee_agent_id, "grantee_agent_id"))

    def check(self, limits: Limits) -> None:
        within(self.reason, "reason", limits.max_metadata_value_chars)


@dataclass(frozen=True, slots=True)
class RevokeGrant(Operation):
    grant_id: str

    def __post_init__(self) -> None:
        _set(self, "grant_id", ident(self.grant_id, "grant_id"))


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class RevokeManifest(Operation):
    """End a manifest and every manifest derived from it."""

    manifest_id: str

    def __post_init__(self) -> None:
        _set(self, "manifest_id", ident(self.manifest_id, "manifest_id"))


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class QueryAudit(Operation):
    """Audit rows the policy lets this identity read, newest first."""

    action: str | None = None  # only rows of this audit action
    memory_id: str | None = None
    limit: int = 100
    since_seq: int = 0

    def __post_init__(self) -> None:
        if self.action is not None and (not isinstance(self.action, str) or self.action not in AUDIT_ACTIONS):
            raise InvalidInput(f"unknown audit action {shown(self.action)}; expected one of: {', '.join(sorted(AUDIT_ACTIONS))}")
        _set(self, "memory_id", optional_ident(self.memory_id, "memory_id"))
        _set(self, "limit", positive_int(self.limit, "limit", 1_000_000))
        if isinstance(self.since_seq, bool) or not isinstance(self.since_seq, int) or self.since_seq < 0:
            raise InvalidInput(f"since_seq must be a non-negative integer, got {shown(self.since_seq)}")

    def check(self, limits: Limits) -> None:
        if self.limit > limits.max_audit_rows:
            raise InvalidInput(f"limit is {self.limit}; at most {limits.max_audit_rows} rows per query")


@dataclass(frozen=True, slots=True)
class StartSession(Operation):
    """Bind the identity's session id to it (first use wins; later use by another identity fails)."""

    continues_session: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ForkSession(Operation):
    """A new session id bound to the same identity as `parent_session_id`."""

    continues_session: ClassVar[bool] = False
    parent_session_id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "parent_session_id", optional_ident(self.parent_session_id, "parent_session_id"))



@dataclass(frozen=True, slots=True)
class PurgeExpired(Operation):
    """Delete the caller's tenant's expired memories (tenant admins), at most `max_deletions`
    per call: each with a write intent and an audit row `expired`. `PurgeReport.complete` says
    whether the tenant is clean; a long purge is a loop of calls, each reporting its progress."""

    max_deletions: int = 1000

    def __post_init__(self) -> None:
        _set(self, "max_deletions", positive_int(self.max_deletions, "max_deletions", 100_000))
