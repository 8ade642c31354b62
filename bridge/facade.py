"""`MemoryBridge`: the public API. Identity in, permission-checked memory operations out.

Every method takes the authenticated `MemoryIdentity` as its first argument — established by an
identity provider from a credential, never parsed from the other arguments — and:

1. re-checks the session binding (a session continued by another identity is refused);
2. asks the policy which scopes it may touch (authorisation before retrieval);
3. calls the backend with exactly that ScopeSet / ScopeKey;
4. guards, ranks, budgets and renders (recall) or audits (every operation).

Nothing acknowledged is lost and nothing half-written remains: a write is audited before it is
acknowledged, and a write whose audit row cannot be stored is rolled back.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from adapters.base import (
    ConversationBackend,
    ConversationMessage,
    MemoryBackend,
    MemoryPatch,
    NewMemory,
    Provenance,
    SearchQuery,
    Status,
    StoredMemory,
    SubjectEraser,
)
from adapters.errors import NotFound
from adapters.scopes import ScopeKey, ScopeSet, Visibility
from adapters.sync import LoopRunner, SyncFacade
from bridge.audit import AuditEvent, AuditLog
from bridge.budget import BudgetConfig, TokenCounter, assemble, min_item_tokens
from bridge.errors import BridgeError, InvalidInput, ManifestError, NotPermitted, RecallIncomplete
from bridge.extract import Extractor, RuleExtractor
from bridge.grants import Grant, GrantStore
from bridge.guard import guard_hits
from bridge.models import CaptureResult, MemoryRef, Message, RecalledMemory, RecallResult, WriteResult
from bridge.multiagent import InjectDepth, InjectionManifest, ManifestStore
from bridge.policy import ROLE_ADMIN, Policy
from bridge.ranking import rank_hits
from bridge.render import render_context
from bridge.sqlite import Database
from bridge.vocabulary import Kind, Purpose, parse_kind, parse_purpose
from identity.errors import SessionIdentityMismatch
from identity.ids import InvalidIdError, validate_id
from identity.model import MemoryIdentity
from identity.sessions import InMemorySessionRegistry, SessionRegistry, SqliteSessionRegistry

__all__ = ["Limits", "MemoryBridge", "SyncMemoryBridge"]

log = logging.getLogger("viking_bridge")

# How many memories of one shared scope an erasure inspects; a larger scope fails loudly.
ERASURE_WALK_LIMIT = 10_000
# Metadata keys the bridge itself writes (promotion lineage, author tenant, manifest); callers
# may not set them, so the bridge can trust them when it reads them back.
RESERVED_METADATA_PREFIX = "vb."
PROMOTED_FROM = "vb.promoted_from"
PROMOTED_BY = "vb.promoted_by"
AUTHOR_TENANT = "vb.author_tenant"
MANIFEST_ID = "vb.manifest_id"
MAX_MANIFEST_TTL_SECONDS = 7 * 86400


@dataclass(frozen=True)
class Limits:
    """Input limits; every breach is an `InvalidInput` naming the limit."""

    max_query_chars: int = 4000
    max_content_chars: int = 8000
    max_metadata_keys: int = 32
    max_metadata_value_chars: int = 1000
    max_messages: int = 1000
    candidate_limit: int = 50
    max_extra_scopes: int = 32  # include_scopes of one recall (each costs a grant lookup)
    max_memory_refs: int = 200  # memory_refs of one injection (each costs a backend read)


def _text(value: object, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{what} must not be empty")
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {limit}")
    return value


def _ref(ref: MemoryRef | tuple[str, str] | Mapping[str, str]) -> tuple[ScopeKey, str]:
    if isinstance(ref, tuple):
        ref = MemoryRef(scope=ref[0], memory_id=ref[1])
    elif isinstance(ref, Mapping):
        ref = MemoryRef(**ref)
    try:
        return ScopeKey.parse(ref.scope), validate_id(ref.memory_id, "memory_id")
    except (ValueError, InvalidIdError) as exc:
        raise InvalidInput(f"not a memory reference: {exc}") from None


def _parse_visibility(value: Visibility | str | None) -> Visibility | None:
    if value is None or isinstance(value, Visibility):
        return value
    try:
        return Visibility(value)
    except ValueError:
        raise InvalidInput(f"unknown visibility {value!r}; expected one of: {', '.join(v.value for v in Visibility)}") from None


def _audits_refusals(method: Callable[..., Any]) -> Callable[..., Any]:
    """Record every refused attempt (not permitted, manifest misuse, recall failed closed,
    session hijack) as a `denied` audit row before re-raising: who tried what is security data."""
    refusals = (NotPermitted, RecallIncomplete, SessionIdentityMismatch)

    def record(self: "MemoryBridge", identity: object, exc: BaseException) -> None:
        if isinstance(identity, MemoryIdentity):
            try:
                self.audit.append(identity, "denied", detail={"operation": method.__name__, "error": type(exc).__name__, "message": str(exc)[:300]})
            except Exception:  # never mask the refusal itself
                log.exception("could not audit a refused %s", method.__name__)

    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def async_wrapper(self: "MemoryBridge", identity: object, *args: Any, **kwargs: Any) -> Any:
            try:
                return await method(self, identity, *args, **kwargs)
            except refusals as exc:
                record(self, identity, exc)
                raise

        return async_wrapper

    @functools.wraps(method)
    def wrapper(self: "MemoryBridge", identity: object, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, identity, *args, **kwargs)
        except refusals as exc:
            record(self, identity, exc)
            raise

    return wrapper


class MemoryBridge:
    """Async facade. Build with `MemoryBridge.open_local(home)` or pass any `MemoryBackend`."""

    def __init__(
        self,
        backend: MemoryBackend,
        state: Database,
        *,
        sessions: SessionRegistry | None = None,
        policy: Policy | None = None,
        extractor: Extractor | None = None,
        token_counter: TokenCounter | None = None,
        budget: BudgetConfig | None = None,
        limits: Limits | None = None,
        server_side_extraction: bool = False,
        audit_fsync_reads: bool = False,
    ) -> None:
        self.backend = backend
        self.state = state
        self.sessions: SessionRegistry = sessions if sessions is not None else InMemorySessionRegistry()
        self.policy = policy or Policy()
        self.extractor: Extractor = extractor or RuleExtractor()
        self.token_counter = token_counter
        self.budget = budget or BudgetConfig()
        self.limits = limits or Limits()
        self.audit = AuditLog(state, fsync_reads=audit_fsync_reads)
        self.grants = GrantStore(state)
        self.manifests = ManifestStore(state)
        self.server_side_extraction = server_side_extraction and backend.capabilities.server_side_extraction

    @classmethod
    def open_local(cls, home: str | Path, **kwargs: Any) -> "MemoryBridge":
        """The embedded default: store, bridge state and session bindings under one directory."""
        from adapters.local import LocalBackend

        home = Path(home)
        embedder = kwargs.pop("embedder", None)
        backend = LocalBackend(home / "store", embedder=embedder)
        sessions = kwargs.pop("sessions", None) or SqliteSessionRegistry(home / "sessions.sqlite3")
        return cls(backend, Database(home / "bridge.sqlite3"), sessions=sessions, **kwargs)

    @classmethod
    def with_backend(cls, backend: MemoryBackend, home: str | Path, **kwargs: Any) -> "MemoryBridge":
        """Any backend, with the bridge's own state (audit, grants, manifests, sessions) in `home`."""
        home = Path(home)
        sessions = kwargs.pop("sessions", None) or SqliteSessionRegistry(home / "sessions.sqlite3")
        return cls(backend, Database(home / "bridge.sqlite3"), sessions=sessions, **kwargs)

    async def aclose(self) -> None:
        await self.backend.aclose()
        close = getattr(self.sessions, "close", None)
        if close is not None:
            close()
        self.state.close()

    # -- sessions -------------------------------------------------------------------------
    def _enter(self, identity: MemoryIdentity) -> MemoryIdentity:
        if not isinstance(identity, MemoryIdentity):
            raise InvalidInput("the first argument must be an authenticated MemoryIdentity")
        return self.sessions.continue_session(identity)

    def start_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        return self.sessions.start_session(identity)

    def fork_session(self, identity: MemoryIdentity, parent_session_id: str | None = None) -> MemoryIdentity:
        return self.sessions.fork(identity, parent_session_id or identity.session_id)

    # -- recall ---------------------------------------------------------------------------
    @_audits_refusals
    async def recall(
        self,
        identity: MemoryIdentity,
        query: str,
        *,
        purpose: Purpose | str = Purpose.CHAT,
        budget_tokens: int | None = None,
        kinds: Iterable[Kind | str] | None = None,
        include_scopes: Iterable[ScopeKey | str] = (),
        manifest_id: str | None = None,
        allow_partial: bool = False,
    ) -> RecallResult:
        """Ranked, budgeted, labelled memories the identity may read for `query`.

        `include_scopes`: scopes outside the default set, each of which must be covered by an
        active grant (else `NotPermitted`). `manifest_id`: an injection manifest issued to this
        agent. `allow_partial`: return what succeeded, marked partial, instead of raising when a
        scope fails.
        """
        identity = self._enter(identity)
        query = _text(query, "query", self.limits.max_query_chars)
        purpose = parse_purpose(purpose)
        budget = self.budget if budget_tokens is None else BudgetConfig(budget_tokens, self.budget.per_item_overhead, self.budget.kind_quotas, self.budget.max_items)
        if not isinstance(budget.max_tokens, int) or budget.max_tokens < min_item_tokens(budget):
            raise InvalidInput(f"budget_tokens must be at least {min_item_tokens(budget)} (one item with its label)")
        kind_set = frozenset(parse_kind(k).value for k in kinds) if kinds is not None else None
        if kind_set is not None and not kind_set:
            raise InvalidInput("kinds, when given, must name at least one kind")

        include_scopes = list(include_scopes)
        if len(include_scopes) > self.limits.max_extra_scopes:
            raise InvalidInput(f"include_scopes names {len(include_scopes)} scopes; the limit is {self.limits.max_extra_scopes}")
        granted = []
        for raw in include_scopes:
            key = raw if isinstance(raw, ScopeKey) else self._parse_scope(raw)
            grant = self.grants.authorise(identity, key)
            granted.append((key, grant.grant_id))
        injected = []
        manifest: InjectionManifest | None = None
        if manifest_id is not None:
            manifest = self.manifests.load_for(identity, manifest_id)
            parent = f"{manifest.user_id}@{manifest.parent_agent_id}"
            injected = [(key, ids, manifest.manifest_id, parent) for key, ids in manifest.by_scope().items()]
        scopes = self.policy.readable_scopes(identity, purpose, granted=granted, injected=injected)

        search = SearchQuery(scopes, query, limit=self.limits.candidate_limit, kinds=kind_set)
        result = await self.backend.search(search)
        failed = tuple(str(k) for k in result.failed_scopes)
        if failed and not allow_partial:
            raise RecallIncomplete(f"recall failed closed: {len(failed)} scope(s) could not be searched: {', '.join(failed)}", result.failed_scopes)

        hits, alarms = guard_hits(result.hits, scopes, statuses=search.statuses, kinds=kind_set)
        for alarm in alarms:
            log.error("guard alarm: %s dropped memory %s from %s (%s)", identity.principal, alarm.memory_id, alarm.stored_scope, alarm.reason)
            self.audit.append(identity, "guard_alarm", memory_ids=[alarm.memory_id], scopes=[alarm.stored_scope, alarm.claimed_scope], detail={"reason": alarm.reason, "backend": self.backend.name})

        ranked = rank_hits(hits, scopes, purpose, self.policy)
        chosen, used = assemble(ranked, budget, self.token_counter)
        items = [self._recalled(item, scopes, manifest) for item in chosen]
        context = render_context(identity.principal, purpose.value, items, partial=bool(failed))
        seq = self.audit.append(
            identity,
            "recall",
            memory_ids=[i.memory_id for i in items],
            scopes=[i.scope for i in items],
            grant_ids=[i.grant_id for i in items],
            detail={"purpose": purpose.value, "searched": [str(k) for k in scopes.keys], "failed": list(failed)},
        )
        # model_construct: every field is built above from validated records (recall hot path)
        return RecallResult.model_construct(
            identity=identity.principal,
            purpose=purpose.value,
            query=query,
            items=tuple(items),
            context=context,
            tokens_used=used,
            scopes_searched=tuple(str(k) for k in scopes.keys),
            partial=bool(failed),
            failed_scopes=failed,
            guard_alarms=len(alarms),
            audit_seq=seq,
        )

    @staticmethod
    def _parse_scope(text: str) -> ScopeKey:
        try:
            return ScopeKey.parse(text)
        except (ValueError, InvalidIdError) as exc:
            raise InvalidInput(f"not a scope: {exc}") from None

    def _recalled(self, item: Any, scopes: ScopeSet, manifest: InjectionManifest | None) -> RecalledMemory:
        hit = item.ranked.hit
        m: StoredMemory = hit.memory
        entry = scopes.entry(hit.scope)
        injected_by = m.provenance.injected_by
        if manifest is not None and entry.grant_id == manifest.manifest_id:
            injected_by = f"{manifest.user_id}@{manifest.parent_agent_id}"
        return RecalledMemory(
            memory_id=m.id,
            scope=str(m.scope),
            visibility=m.scope.visibility.value,
            kind=m.kind,
            content=m.content,
            score=round(item.ranked.score, 6),
            why_visible=entry.reason,
            grant_id=entry.grant_id,
            author=f"{m.provenance.author_user_id}@{m.provenance.author_agent_id}",
            injected_by=injected_by,
            derived_from=m.provenance.derived_from,
            status=m.status.value,
            conflicts_with=tuple(MemoryRef(scope=str(c.hit.scope), memory_id=c.hit.memory.id) for c in item.conflicts_with),
            duplicates=tuple(MemoryRef(scope=str(d.hit.scope), memory_id=d.hit.memory.id) for d in item.duplicates),
        )

    # -- writes ---------------------------------------------------------------------------
    def _metadata(self, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        data = dict(metadata or {})
        if len(data) > self.limits.max_metadata_keys:
            raise InvalidInput(f"metadata has {len(data)} keys; the limit is {self.limits.max_metadata_keys}")
        for key, value in data.items():
            if not isinstance(key, str) or not key or len(key) > 64:
                raise InvalidInput(f"metadata key {key!r} must be a non-empty string of at most 64 characters")
            if key.startswith(RESERVED_METADATA_PREFIX):
                raise InvalidInput(f"metadata key {key!r} is reserved for the bridge (prefix {RESERVED_METADATA_PREFIX!r})")
            if not isinstance(value, (str, int, float, bool, type(None))):
                raise InvalidInput(f"metadata value for {key!r} must be a string, number, boolean or null")
            if isinstance(value, str) and len(value) > self.limits.max_metadata_value_chars:
                raise InvalidInput(f"metadata value for {key!r} is longer than {self.limits.max_metadata_value_chars} characters")
        return data

    @staticmethod
    def _backend_key(identity: MemoryIdentity, scope: ScopeKey, caller_key: str | None, material: str) -> str:
        """Idempotency key as stored: namespaced by the writer, so two users' keys never meet."""
        if caller_key is not None:
            validate_id(caller_key, "idempotency_key")
            basis = f"key|{caller_key}"
        else:
            basis = f"auto|{identity.session_id}|{material}"
        digest = hashlib.sha256(f"{identity.tenant_id}|{identity.user_id}|{identity.agent_id}|{scope}|{basis}".encode()).hexdigest()
        return "vb" + digest[:40]

    async def _store(
        self,
        identity: MemoryIdentity,
        scope: ScopeKey,
        new: NewMemory,
        reason: str,
        idempotency_key: str | None,
        *,
        action: str = "write",
        detail: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        key = self._backend_key(identity, scope, idempotency_key, f"{new.kind}|{new.content}")
        # A unique creation stamp tells a fresh record from the one an idempotent retry returns.
        new = replace(new, created_at=time.time())
        stored = await self.backend.put(scope, new, idempotency_key=key)
        deduplicated = stored.created_at != new.created_at
        if stored.scope != scope:  # an adapter that stored elsewhere is a bug; never acknowledge it
            raise NotPermitted(f"backend {self.backend.name} stored the memory in {stored.scope}, not {scope}")
        try:
            self.audit.append(identity, action, memory_ids=[stored.id], scopes=[scope], detail={"kind": new.kind, "status": stored.status.value, **(detail or {})})
        except Exception:
            if not deduplicated:  # no acknowledged write without its audit row
                await self.backend.delete(scope, stored.id)
            raise
        return WriteResult(
            memory_id=stored.id,
            scope=str(scope),
            visibility=scope.visibility.value,
            kind=stored.kind,
            status=stored.status.value,
            reason=reason,
            deduplicated=deduplicated,
        )

    def _provenance(self, identity: MemoryIdentity, *, message_ids: Sequence[str] = (), derived_from: Sequence[str] = ()) -> Provenance:
        return Provenance(
            author_user_id=identity.user_id,
            author_agent_id=identity.agent_id,
            session_id=identity.session_id,
            source_message_ids=tuple(message_ids),
            derived_from=tuple(derived_from),
        )

    @_audits_refusals
    async def remember(
        self,
        identity: MemoryIdentity,
        content: str,
        kind: Kind | str,
        *,
        visibility: Visibility | str | None = None,
        department_id: str | None = None,
        idempotency_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        confidence: float = 1.0,
    ) -> WriteResult:
        """Store an explicit memory. Where it lands is decided by the policy from `identity`."""
        identity = self._enter(identity)
        return await self._remember(identity, content, kind, visibility, department_id, idempotency_key, metadata, confidence)

    async def _remember(
        self,
        identity: MemoryIdentity,
        content: str,
        kind: Kind | str,
        visibility: Visibility | str | None,
        department_id: str | None,
        idempotency_key: str | None,
        metadata: Mapping[str, Any] | None,
        confidence: float,
        *,
        message_ids: Sequence[str] = (),
        derived_from: Sequence[str] = (),
        bridge_metadata: Mapping[str, str] | None = None,
        captured: bool = False,
    ) -> WriteResult:
        content = _text(content, "content", self.limits.max_content_chars)
        kind = parse_kind(kind)
        if not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
            raise InvalidInput(f"confidence must be within [0, 1], got {confidence!r}")
        if department_id is not None:
            validate_id(department_id, "department_id")
        decision = self.policy.decide_write(identity, kind, _parse_visibility(visibility), department_id=department_id)
        status, reason = decision.status, decision.reason
        if captured and decision.scope.visibility not in (Visibility.PRIVATE, Visibility.AGENT):
            # Extracted from conversation text: the text chose the kind, so it may not also
            # choose to share. Seed 003: agent inferences never become shared knowledge unconfirmed.
            status, reason = Status.PENDING, f"{reason}; extracted from conversation, pending approval"
        extra = dict(bridge_metadata or {})
        if decision.scope.visibility is Visibility.GLOBAL:
            extra[AUTHOR_TENANT] = identity.tenant_id
        new = NewMemory(
            content=content,
            kind=kind.value,
            provenance=self._provenance(identity, message_ids=message_ids, derived_from=derived_from),
            status=status,
            confidence=float(confidence),
            subject_user_id=identity.user_id,
            metadata={**self._metadata(metadata), **extra},
        )
        return await self._store(identity, decision.scope, new, reason, idempotency_key)

    @_audits_refusals
    async def capture(self, identity: MemoryIdentity, messages: Sequence[Message | Mapping[str, Any]], *, idempotency_key: str | None = None) -> CaptureResult:
        """Conversation -> memories. Message text is data: it cannot change scope or identity."""
        identity = self._enter(identity)
        parsed = [m if isinstance(m, Message) else Message(**m) for m in messages]
        if not parsed:
            raise InvalidInput("capture needs at least one message")
        if len(parsed) > self.limits.max_messages:
            raise InvalidInput(f"capture got {len(parsed)} messages; the limit is {self.limits.max_messages}")
        for m in parsed:
            _text(m.content, "message content", self.limits.max_content_chars)
        if self.server_side_extraction and isinstance(self.backend, ConversationBackend):
            session_key = hashlib.sha256(f"{identity.fingerprint}|{identity.session_id}".encode()).hexdigest()
            receipt = await self.backend.capture(
                ScopeKey.private(identity.tenant_id, identity.user_id),
                [ConversationMessage(m.role, m.content, m.message_id) for m in parsed],
                session_key=session_key,
                provenance=self._provenance(identity, message_ids=[m.message_id for m in parsed if m.message_id]),
            )
            self.audit.append(identity, "capture", scopes=[ScopeKey.private(identity.tenant_id, identity.user_id)], detail={"backend_session": receipt.backend_session_id, "messages": receipt.accepted_messages})
            return CaptureResult(written=(), skipped=0, backend_session_id=receipt.backend_session_id)
        written = []
        candidates = self.extractor.extract(parsed)
        for n, candidate in enumerate(candidates):
            key = None if idempotency_key is None else f"{idempotency_key}.{n}"
            written.append(
                await self._remember(
                    identity, candidate.content, candidate.kind, None, None, key, None, 0.8,
                    message_ids=[candidate.message_id] if candidate.message_id else [],
                    captured=True,
                )
            )
        return CaptureResult(written=tuple(written), skipped=len(parsed) - len({c.message_id for c in candidates}))

    # -- lifecycle ------------------------------------------------------------------------
    async def _readable_memory(self, identity: MemoryIdentity, ref: MemoryRef | tuple[str, str]) -> StoredMemory:
        """Fetch a memory by reference — only from a scope the identity reads by default."""
        key, memory_id = _ref(ref)
        own = {k for k, _ in self.policy.own_scopes(identity)}
        if key not in own:
            raise NotPermitted(f"{identity.principal} cannot act on memories in {key}")
        return await self.backend.get(key, memory_id)

    @_audits_refusals
    async def forget(self, identity: MemoryIdentity, ref: MemoryRef | tuple[str, str]) -> bool:
        """Hard-delete one memory (record, vector, manifests referencing it) and audit it."""
        identity = self._enter(identity)
        key, memory_id = _ref(ref)
        try:
            if identity.has_role(ROLE_ADMIN) and key.tenant_id == identity.tenant_id:
                memory = await self.backend.get(key, memory_id)
            else:
                memory = await self._readable_memory(identity, ref)
        except NotFound:
            return False
        author_tenant = memory.metadata.get(AUTHOR_TENANT)
        if not self.policy.may_forget(identity, key, memory.provenance.author_user_id, author_tenant if isinstance(author_tenant, str) else None):
            raise NotPermitted(f"{identity.principal} may not forget {key}#{memory_id}: not the author and not a tenant admin")
        deleted = await self.backend.delete(key, memory_id)
        self.manifests.purge_memory_ids({memory_id})
        self.audit.append(identity, "forget", memory_ids=[memory_id], scopes=[key])
        return deleted

    @_audits_refusals
    async def forget_subject(self, identity: MemoryIdentity, subject_user_id: str) -> int:
        """Remove every memory about or by `subject_user_id` in the tenant (GDPR erasure).

        Allowed for the subject themself and for tenant admins. Walks every scope of the
        tenant: the subject's private and agent scopes go entirely; in shared scopes, memories
        authored by or about the subject go. Manifests are purged; one audit row remains.
        """
        identity = self._enter(identity)
        validate_id(subject_user_id, "subject_user_id")
        if subject_user_id != identity.user_id and not identity.has_role(ROLE_ADMIN):
            raise NotPermitted(f"forgetting user {subject_user_id!r} needs the {ROLE_ADMIN!r} role")
        removed: list[str] = []
        scopes_touched: list[ScopeKey] = []
        for memory in await self._global_memories_of(identity.tenant_id, subject_user_id):
            await self.backend.delete(memory.scope, memory.id)
            removed.append(memory.id)
            scopes_touched.append(memory.scope)
        for key in await self.backend.list_scopes(identity.tenant_id):
            whole = (key.visibility is Visibility.PRIVATE and key.owner_id == subject_user_id) or (
                key.visibility is Visibility.AGENT and key.user_id == subject_user_id
            )
            listing = await self.backend.list(key, limit=ERASURE_WALK_LIMIT)
            if len(listing) >= ERASURE_WALK_LIMIT and not whole:
                # we could not see the whole scope: say so instead of reporting a partial erasure as done
                raise BridgeError(f"erasure stopped: scope {key} holds more than {ERASURE_WALK_LIMIT} memories to check; nothing past {len(removed)} removals is guaranteed")
            while listing:
                doomed = [m for m in listing if whole or m.subject_user_id == subject_user_id or m.provenance.author_user_id == subject_user_id]
                for memory in doomed:
                    await self.backend.delete(key, memory.id)
                    removed.append(memory.id)
                if doomed:
                    scopes_touched.append(key)
                if not whole or len(listing) < ERASURE_WALK_LIMIT:
                    break
                listing = await self.backend.list(key, limit=ERASURE_WALK_LIMIT)
        traces = 0
        if isinstance(self.backend, SubjectEraser):  # adapter bookkeeping (capture records, registries)
            traces = await self.backend.erase_subject_traces(identity.tenant_id, subject_user_id)
        self.manifests.purge_memory_ids(set(removed))
        manifests = self.manifests.purge_user(identity.tenant_id, subject_user_id)  # task texts are personal data too
        grants = self.grants.purge_grantee(identity.tenant_id, subject_user_id)
        self.audit.append(
            identity, "forget_subject", memory_ids=removed, scopes=scopes_touched,
            detail={"subject": subject_user_id, "count": len(removed), "manifests": manifests, "grants": grants, "backend_traces": traces},
        )
        return len(removed)

    async def _global_memories_of(self, tenant_id: str, subject_user_id: str) -> list[StoredMemory]:
        """Global memories this tenant wrote by or about `subject_user_id` (erasure reaches them too)."""
        if not self.policy.config.include_global and tenant_id not in self.policy.config.global_writer_tenants:
            return []
        listing = await self.backend.list(ScopeKey.global_(), limit=ERASURE_WALK_LIMIT)
        if len(listing) >= ERASURE_WALK_LIMIT:
            raise BridgeError(f"erasure stopped: the global scope holds more than {ERASURE_WALK_LIMIT} memories to check")
        return [
            m for m in listing
            if m.metadata.get(AUTHOR_TENANT) == tenant_id
            and subject_user_id in (m.subject_user_id, m.provenance.author_user_id)
        ]

    @_audits_refusals
    async def approve(self, identity: MemoryIdentity, ref: MemoryRef | tuple[str, str]) -> WriteResult:
        """Activate a pending memory (department standard, promotion proposal)."""
        identity = self._enter(identity)
        key, memory_id = _ref(ref)
        if not self.policy.may_approve(identity, key):
            raise NotPermitted(f"{identity.principal} may not approve memories in {key} (needs the approver role for that scope, or admin)")
        memory = await self.backend.get(key, memory_id)
        if memory.status is not Status.PENDING:
            raise InvalidInput(f"memory {memory_id} is {memory.status.value}, not pending")
        source = await self._promotion_source(identity, memory)  # checked BEFORE anything changes
        updated = await self.backend.update(key, memory_id, MemoryPatch(status=Status.ACTIVE))
        superseded = []
        if source is not None:
            await self.backend.update(source.scope, source.id, MemoryPatch(status=Status.SUPERSEDED))
            superseded.append(source.id)
        self.audit.append(identity, "approve", memory_ids=[memory_id, *superseded], scopes=[key, *(s_.scope for s_ in ([source] if source else []))], detail={"superseded": superseded})
        return WriteResult(memory_id=memory_id, scope=str(key), visibility=key.visibility.value, kind=updated.kind, status=updated.status.value, reason=f"approved by {identity.principal}")

    async def _promotion_source(self, approver: MemoryIdentity, proposal: StoredMemory) -> StoredMemory | None:
        """The memory a promotion proposal replaces, verified — or None if it is no promotion.

        The reference is bridge-written metadata (callers cannot set `vb.` keys), and it is
        still checked: same tenant as the approver, named in the proposal's lineage, written by
        the proposal's author. A source that no longer exists is simply not superseded.
        """
        ref_text = proposal.metadata.get(PROMOTED_FROM)
        if ref_text is None:
            return None
        scope_text, _, source_id = str(ref_text).rpartition("#")
        try:
            source_scope = ScopeKey.parse(scope_text)
        except (ValueError, InvalidIdError):
            raise NotPermitted(f"proposal {proposal.id} names an invalid source {ref_text!r}; refusing to approve") from None
        if source_scope.tenant_id != approver.tenant_id or source_id not in proposal.provenance.derived_from:
            raise NotPermitted(f"proposal {proposal.id} names a source outside its tenant or lineage; refusing to approve")
        try:
            source = await self.backend.get(source_scope, source_id)
        except NotFound:
            return None
        if source.provenance.author_user_id != proposal.provenance.author_user_id:
            raise NotPermitted(f"proposal {proposal.id} would supersede a memory by another author; refusing to approve")
        return source

    @_audits_refusals
    async def promote(self, identity: MemoryIdentity, ref: MemoryRef | tuple[str, str], to: Visibility | str, *, department_id: str | None = None) -> WriteResult:
        """Raise a memory's visibility. Admins do it directly; anyone else files a pending proposal."""
        identity = self._enter(identity)
        source = await self._readable_memory(identity, ref)
        target_visibility = _parse_visibility(to)
        assert target_visibility is not None
        if source.provenance.author_user_id != identity.user_id and not identity.has_role(ROLE_ADMIN):
            raise NotPermitted("only the author or a tenant admin may propose changing a memory's visibility")
        t = identity.tenant_id
        if target_visibility is Visibility.WORKSPACE and identity.workspace_id:
            target = ScopeKey.workspace(t, identity.workspace_id)
        elif target_visibility is Visibility.DEPARTMENT:
            dept = department_id or (next(iter(identity.department_ids)) if len(identity.department_ids) == 1 else None)
            if dept is None or dept not in identity.department_ids:
                raise NotPermitted("promotion to a department needs department_id naming one of your departments")
            target = ScopeKey.department(t, dept)
        elif target_visibility is Visibility.TENANT:
            target = ScopeKey.tenant(t)
        elif target_visibility is Visibility.GLOBAL:
            self.policy.require_global_writer(identity)
            target = ScopeKey.global_()
        else:
            raise NotPermitted(f"cannot promote to {target_visibility.value}: promotion only widens to workspace, department, tenant or global")
        if target == source.scope:
            raise InvalidInput(f"memory is already in {target}")
        direct = identity.has_role(ROLE_ADMIN) or target_visibility is Visibility.GLOBAL
        new = NewMemory(
            content=source.content,
            kind=source.kind,
            provenance=Provenance(
                author_user_id=source.provenance.author_user_id,
                author_agent_id=source.provenance.author_agent_id,
                session_id=identity.session_id,
                derived_from=(source.id,),
            ),
            status=Status.ACTIVE if direct else Status.PENDING,
            confidence=source.confidence,
            subject_user_id=source.subject_user_id,
            metadata={
                **source.metadata,
                PROMOTED_FROM: f"{source.scope}#{source.id}",
                PROMOTED_BY: identity.principal,
                **({AUTHOR_TENANT: identity.tenant_id} if target.visibility is Visibility.GLOBAL else {}),
            },
        )
        result = await self._store(identity, target, new, "promoted by an admin" if direct else "promotion proposal awaiting approval", None, action="promote", detail={"from": f"{source.scope}#{source.id}"})
        if direct:
            await self.backend.update(source.scope, source.id, MemoryPatch(status=Status.SUPERSEDED))
        return result

    # -- grants ---------------------------------------------------------------------------
    @_audits_refusals
    def grant(self, admin: MemoryIdentity, grantee_user_id: str, scope: ScopeKey | str, *, ttl_seconds: float, reason: str, grantee_agent_id: str | None = None) -> Grant:
        admin = self._enter(admin)
        key = scope if isinstance(scope, ScopeKey) else self._parse_scope(scope)
        grant = self.grants.issue(admin, grantee_user_id=grantee_user_id, scope=key, ttl_seconds=ttl_seconds, reason=reason, grantee_agent_id=grantee_agent_id)
        self.audit.append(admin, "grant", scopes=[key], grant_ids=[grant.grant_id], detail={"grantee": grantee_user_id, "expires_at": grant.expires_at})
        return grant

    @_audits_refusals
    def revoke_grant(self, admin: MemoryIdentity, grant_id: str) -> None:
        admin = self._enter(admin)
        self.grants.revoke(admin, grant_id)
        self.audit.append(admin, "revoke", grant_ids=[grant_id])

    # -- multi-agent ----------------------------------------------------------------------
    @_audits_refusals
    async def inject(
        self,
        parent: MemoryIdentity,
        child_agent_id: str,
        task: str,
        *,
        depth: InjectDepth | str = InjectDepth.STANDARD,
        memory_refs: Sequence[MemoryRef | tuple[str, str]] | None = None,
        from_manifest_id: str | None = None,
        ttl_seconds: float = 3600,
        may_reinject: bool = False,
    ) -> InjectionManifest:
        """Hand `child_agent_id` (same tenant and user) a read-only manifest of memories."""
        parent = self._enter(parent)
        validate_id(child_agent_id, "child_agent_id")
        task = _text(task, "task", self.limits.max_query_chars)
        try:
            depth = InjectDepth(depth)
        except ValueError:
            raise InvalidInput(f"unknown depth {depth!r}; expected minimal, standard or full") from None
        if child_agent_id == parent.agent_id:
            raise ManifestError(f"agent {parent.agent_id} cannot inject memories into itself")
        if not isinstance(ttl_seconds, (int, float)) or not 0 < ttl_seconds <= MAX_MANIFEST_TTL_SECONDS:
            raise InvalidInput(f"ttl_seconds must be within (0, {MAX_MANIFEST_TTL_SECONDS}]; a manifest is for one task")
        expires_cap = None
        source_manifest = None
        if from_manifest_id is not None:
            source_manifest = self.manifests.load_for(parent, from_manifest_id)
            if not source_manifest.may_reinject:
                raise ManifestError(f"manifest {from_manifest_id} does not allow re-injection")
            # a re-injection never outlives its source and cannot be passed on again
            expires_cap, may_reinject = source_manifest.expires_at, False
        entries: list[tuple[ScopeKey, str]] = []
        if memory_refs is not None and len(memory_refs) > self.limits.max_memory_refs:
            raise InvalidInput(f"memory_refs names {len(memory_refs)} memories; the limit is {self.limits.max_memory_refs}")
        if memory_refs is not None:
            allowed = set(source_manifest.entries) if source_manifest else None
            own = {k for k, _ in self.policy.own_scopes(parent)}
            for ref in memory_refs:
                key, memory_id = _ref(ref)
                if allowed is not None:
                    if (key, memory_id) not in allowed:
                        raise ManifestError(f"{key}#{memory_id} is not in manifest {from_manifest_id}")
                elif key not in own:
                    raise ManifestError(f"{parent.principal} cannot inject {key}#{memory_id}: it is not readable through the parent's own scopes")
                memory = await self.backend.get(key, memory_id)
                if memory.status is not Status.ACTIVE:
                    raise ManifestError(f"{key}#{memory_id} is {memory.status.value}; only active memories can be injected")
                entries.append((key, memory_id))
        else:
            if source_manifest is not None:
                raise ManifestError("re-injection must name the memories to pass on (memory_refs)")
            scopes = self.policy.readable_scopes(parent, Purpose.CHAT)
            result = await self.backend.search(SearchQuery(scopes, task, limit=depth.limit))
            if not result.complete:
                raise RecallIncomplete("injection search failed closed", result.failed_scopes)
            hits, _ = guard_hits(result.hits, scopes)
            entries = [(h.scope, h.memory.id) for h in hits]
        manifest = self.manifests.create(parent, child_agent_id, task, depth, entries, ttl_seconds=ttl_seconds, may_reinject=may_reinject, expires_at_most=expires_cap)
        self.audit.append(parent, "inject", memory_ids=manifest.memory_ids, scopes=[k for k, _ in entries], grant_ids=[manifest.manifest_id], detail={"child": child_agent_id, "depth": depth.value})
        return manifest

    @_audits_refusals
    def revoke_manifest(self, parent: MemoryIdentity, manifest_id: str) -> None:
        """End a manifest early; only the agent that issued it (or a tenant admin) may."""
        parent = self._enter(parent)
        self.manifests.revoke(parent, manifest_id, as_admin=parent.has_role(ROLE_ADMIN))
        self.audit.append(parent, "revoke", grant_ids=[manifest_id], detail={"manifest": manifest_id})

    @_audits_refusals
    async def write_back(self, child: MemoryIdentity, manifest_id: str, content: str, kind: Kind | str, *, visibility: Visibility | str | None = None, idempotency_key: str | None = None) -> WriteResult:
        """A child's result, stored with `derived_from` = the injected memory ids (lineage)."""
        child = self._enter(child)
        manifest = self.manifests.load_for(child, manifest_id)
        return await self._remember(
            child, content, kind, visibility, None, idempotency_key, None, 1.0,
            derived_from=manifest.memory_ids, bridge_metadata={MANIFEST_ID: manifest.manifest_id},
        )

    # -- audit ----------------------------------------------------------------------------
    def audit_events(self, identity: MemoryIdentity, *, action: str | None = None, memory_id: str | None = None, limit: int = 100) -> list[AuditEvent]:
        identity = self._enter(identity)
        return self.audit.query(identity, action=action, memory_id=memory_id, limit=limit)


class SyncMemoryBridge(SyncFacade):
    """Blocking access to `MemoryBridge` for scripts and the CLI: same methods, no `await`."""

    def __init__(self, bridge: MemoryBridge) -> None:
        super().__init__(bridge, LoopRunner())

    @classmethod
    def open_local(cls, home: str | Path, **kwargs: Any) -> "SyncMemoryBridge":
        return cls(MemoryBridge.open_local(home, **kwargs))
