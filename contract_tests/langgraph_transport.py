"""`--via langgraph`: the contract suite's writes and recalls driven through the LangGraph store.

`LangGraphBridge(bridge)` has the `MemoryBridge` surface the suite uses. For every call it binds a
`BridgeStore` to the identity the suite got from a credential (the store's `FixedIdentity`):

    remember(identity, content, kind, visibility, ttl_s)
        -> store put into the namespace of the visibility the call asks for (or the policy's
           default for the kind): ("memories",), ("agent",), ("workspace",), ("department", d),
           ("tenant",), ("global",); key = a fresh uuid; value = {"content", "kind"}; `ttl_s`
           as the put's `ttl` (minutes = ttl_s / 60). The answer is the bridge's WriteResult of
           that put (`BridgeStore.put_item`).
    recall(identity, query, include_scopes=..., kinds=..., purpose=..., only_scopes=...)
        -> store search of the empty namespace (everything the identity may read) with the
           query; granted scopes, kinds, purpose and only_scopes passed to the store's Recall.
           The store items returned are exactly the store's SearchItems (matched to the bridge's
           labels by namespace and key, content = the value's "content" this transport put), so
           a store that showed more would fail the suite's checks. Memories that are no store
           item (written by capture, inject's sources, or a remember below that bypassed the
           store) come from the same Recall the store ran, unchanged.

What a BaseStore cannot express goes straight to the wrapped bridge, as the MCP transport does
for calls without a tool (`self.bypassed` records each):
- a remember with an idempotency key (a put of an existing key overwrites; it never dedups),
  metadata (a store value is content and is rendered as such), confidence, the sharing fields
  (memory_type, visible_to, team_id: no namespace names a team or an audience), an absolute
  `expires_at`, a visibility without a namespace (team, task), a task-scoped identity, or a
  bridge with a byte quota (an item's envelope adds ~200 bytes to what the quota counts);
- grants, capture, set_visible_to, teams, purge_expired, get/list, sessions, audit, approve,
  promote, inject, write_back, and the parts the suite reads directly.
Three cases still fail through the store, because they read the backend's stored content
directly (`contract.backend.get(...).content == text`) and a store item's content is its JSON
envelope: test_child_sees_exactly_what_the_parent_injected_labelled_and_read_only,
test_ids_with_special_characters_unicode_and_prefixes_stay_isolated,
test_nothing_recallable_after_forget_subject. None is a leak; the transport cannot tell at
remember time which write a test will later read raw.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Iterable, Mapping

from adapters.scopes import ScopeKey, Visibility
from bridge.facade import MemoryBridge
from bridge.doors.langgraph import BridgeStore
from bridge.doors.langgraph.items import render_value
from bridge.doors.langgraph.namespaces import labels_scope
from bridge.results import RecallResult, WriteResult
from bridge.vocabulary import parse_kind
from identity.model import MemoryIdentity

__all__ = ["LangGraphBridge"]


class LangGraphBridge:
    def __init__(self, bridge: MemoryBridge) -> None:
        self.inner = bridge
        self.bypassed: list[str] = []  # calls a BaseStore cannot express, sent straight to the bridge

    def __getattr__(self, name: str) -> Any:  # grant, capture, sessions, state, backend, policy, ...
        return getattr(self.inner, name)

    def _store(self, identity: MemoryIdentity) -> BridgeStore:
        return BridgeStore(self.inner, identity)

    def _namespace(self, identity: MemoryIdentity, kind: Any, visibility: Any, department_id: str | None) -> tuple[str, ...]:
        asked = None if visibility is None else Visibility(getattr(visibility, "value", visibility))
        v = asked or self.inner.policy.default_visibility(parse_kind(kind))
        if v is Visibility.WORKSPACE and asked is None and not identity.workspace_id:
            v = Visibility.PRIVATE  # the policy's own fallback for a default workspace write
        if v is Visibility.DEPARTMENT:
            return ("department", department_id) if department_id else ("department",)
        return {Visibility.PRIVATE: ("memories",), Visibility.AGENT: ("agent",), Visibility.WORKSPACE: ("workspace",),
                Visibility.TENANT: ("tenant",), Visibility.GLOBAL: ("global",)}[v]

    @staticmethod
    def _store_can_write(identity: MemoryIdentity, idempotency_key: str | None, metadata: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> bool:
        """What a BaseStore put can express: a value in a namespace, optionally a TTL. Not: an
        idempotency key's dedup (a put of a key overwrites), metadata (a store value is content,
        rendered as such), the sharing fields (no namespace names a team or a visible_to list),
        an absolute `expires_at`, or a task-scoped identity (no task namespace)."""
        return (idempotency_key is None and not metadata and identity.task_id is None
                and all(v is None for k, v in extra.items() if k != "ttl_s"))

    def _byte_quota(self, identity: MemoryIdentity) -> bool:
        """A byte quota counts stored content, and a store item's content is its envelope
        (namespace, key, times, value: ~200 bytes more), so a suite's byte arithmetic cannot hold
        through a store: under a byte quota, writes go straight to the bridge."""
        quotas = getattr(getattr(self.inner, "runtime", None), "quotas", None)
        return quotas is not None and any(q.max_bytes is not None for q in quotas.limits_for(identity.tenant_id))

    async def remember(self, identity: MemoryIdentity, content: str, kind: Any, *, visibility: Any = None, department_id: str | None = None,
                       idempotency_key: str | None = None, metadata: Mapping[str, Any] | None = None, confidence: float = 1.0,
                       **extra: Any) -> WriteResult:
        asked = None if visibility is None else getattr(visibility, "value", visibility)
        if (not self._store_can_write(identity, idempotency_key, metadata, extra) or confidence != 1.0 or self._byte_quota(identity)
                or asked not in (None, "private", "agent", "workspace", "department", "tenant", "global")):
            self.bypassed.append("remember")
            return await self.inner.remember(identity, content, kind, visibility=visibility, department_id=department_id, idempotency_key=idempotency_key,
                                             metadata=metadata, confidence=confidence, **extra)
        namespace = self._namespace(identity, kind, visibility, department_id)
        value = {"content": content, "kind": getattr(kind, "value", kind)}
        ttl_s = extra.get("ttl_s")
        ttl = ttl_s / 60.0 if isinstance(ttl_s, (int, float)) and not isinstance(ttl_s, bool) else ttl_s
        written = await self._store(identity).put_item(identity, namespace, uuid.uuid4().hex, value, ttl=ttl)
        assert isinstance(written, WriteResult), "a fresh key is a new memory"
        return written

    async def recall(self, identity: MemoryIdentity, query: str, *, purpose: Any = "chat", budget_tokens: int | None = None, kinds: Iterable[Any] | None = None,
                     include_scopes: Iterable[Any] = (), manifest_id: str | None = None, allow_partial: bool = False, min_score: float | None = None,
                     only_scopes: Iterable[Any] | None = None) -> RecallResult:
        options: dict[str, Any] = {"purpose": purpose, "include_scopes": tuple(include_scopes), "manifest_id": manifest_id, "allow_partial": allow_partial}
        if kinds is not None:
            options["kinds"] = frozenset(getattr(k, "value", k) for k in kinds)
        if budget_tokens is not None:
            options["budget_tokens"] = budget_tokens
        if min_score is not None:
            options["min_score"] = min_score
        if only_scopes is not None:
            options["only_scopes"] = tuple(only_scopes)
        items, result = await self._store(identity).search_items(identity, (), query=query, limit=10_000, recall_options=options)
        assert result is not None
        # a store item's content is its value's JSON (the wrapper is metadata, which a recall does
        # not carry): a recalled memory is the store item whose value renders to its content in a
        # scope its namespace labels
        shown, plain = [], []
        for r in result.items:
            source = ScopeKey.parse(r.scope)
            match = next((i for i in items if render_value(i.value) == r.content and labels_scope(i.namespace, source)), None)
            if match is not None:  # the content this transport put, as the suite wrote it
                shown.append(dataclasses.replace(r, content=match.value.get("content", r.content)))
            else:  # written by another door (capture, a bypassed remember, inject's sources): no store item, the same Recall's answer
                plain.append(r)
        return result.model_copy(update={"items": tuple(dict.fromkeys(shown + plain))})
