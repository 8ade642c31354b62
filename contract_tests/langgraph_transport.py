"""`--via langgraph`: the contract suite's writes and recalls driven through the LangGraph store.

`LangGraphBridge(bridge)` has the `MemoryBridge` surface the suite uses. For every call it binds a
`BridgeStore` to the identity the suite got from a credential (the store's `FixedIdentity`):

    remember(identity, content, kind, visibility, department_id, metadata)
        -> store put into the namespace of the visibility the call asks for (or the policy's
           default for the kind): ("memories",), ("agent",), ("workspace",), ("department", d),
           ("tenant",), ("global",); key = the idempotency key or a fresh uuid; value =
           {"content", "kind", **metadata} — so forged metadata travels as item value fields.
           The answer is the bridge's WriteResult of that put (`BridgeStore.put_item`).
    recall(identity, query, include_scopes=..., kinds=..., purpose=...)
        -> store search of the empty namespace (everything the identity may read) with the
           query; granted scopes, kinds and purpose passed to the store's Recall. The items
           returned are exactly the store's SearchItems (matched to the bridge's labels by
           namespace and key), so a store that showed more would fail the suite's checks.

Everything the store has no door for (grants, capture, sessions, audit, approve, promote, the
parts the suite reads directly) is the wrapped bridge's, unchanged.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterable, Mapping

from adapters.scopes import ScopeKey, Visibility
from bridge.facade import MemoryBridge
from bridge.integrations.langgraph import BridgeStore
from bridge.integrations.langgraph.items import decode
from bridge.models import RecallResult, WriteResult
from bridge.vocabulary import parse_kind
from identity.model import MemoryIdentity

__all__ = ["LangGraphBridge"]


class LangGraphBridge:
    def __init__(self, bridge: MemoryBridge) -> None:
        self.inner = bridge

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

    async def remember(self, identity: MemoryIdentity, content: str, kind: Any, *, visibility: Any = None, department_id: str | None = None,
                       idempotency_key: str | None = None, metadata: Mapping[str, Any] | None = None, confidence: float = 1.0) -> WriteResult:
        namespace = self._namespace(identity, kind, visibility, department_id)
        value = {**dict(metadata or {}), "content": content, "kind": getattr(kind, "value", kind)}
        written = await self._store(identity).put_item(identity, namespace, idempotency_key or uuid.uuid4().hex, value)
        assert isinstance(written, WriteResult), "a fresh key is a new memory"
        return written

    async def recall(self, identity: MemoryIdentity, query: str, *, purpose: Any = "chat", budget_tokens: int | None = None, kinds: Iterable[Any] | None = None,
                     include_scopes: Iterable[Any] = (), manifest_id: str | None = None, allow_partial: bool = False, min_score: float | None = None) -> RecallResult:
        options: dict[str, Any] = {"purpose": purpose, "include_scopes": tuple(include_scopes), "manifest_id": manifest_id, "allow_partial": allow_partial}
        if kinds is not None:
            options["kinds"] = frozenset(getattr(k, "value", k) for k in kinds)
        if budget_tokens is not None:
            options["budget_tokens"] = budget_tokens
        if min_score is not None:
            options["min_score"] = min_score
        items, result = await self._store(identity).search_items(identity, (), query=query, limit=10_000, recall_options=options)
        assert result is not None
        by_item = {}
        for r in result.items:
            d = decode(r.content)
            if d is not None:
                by_item.setdefault((d.namespace, d.key, ScopeKey.parse(r.scope)), r)
        shown = []
        for i in items:
            matches = [r for (ns, key, _), r in by_item.items() if ns == i.namespace and key == i.key]
            shown.extend(matches)
        return result.model_copy(update={"items": tuple(dict.fromkeys(shown))})
