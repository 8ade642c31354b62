"""LangGraph's `BaseStore` over the bridge: `BridgeStore`.

    from bridge.doors.langgraph import BridgeStore, AuthUserIdentity
    store = BridgeStore(bridge, identity)                # a verified MemoryIdentity, or
    store = BridgeStore(bridge, AuthUserIdentity(jwt))   # the run's langgraph_auth_user
    graph = builder.compile(store=store)

Modules: `namespaces` (namespace -> scope, refusals), `identity` (who is asking), `items` (an
item as a memory), `store` (the BaseStore), `errors`. Needs `pip install 'viking-bridge[langgraph]'`.
"""

from bridge.doors.langgraph.errors import NamespaceRefused, StoreIdentityMissing, UnknownNamespace, UnsupportedStoreOperation
from bridge.doors.langgraph.identity import AuthUserIdentity, FixedIdentity, IdentitySource
from bridge.doors.langgraph.namespaces import HEADS, namespace_of_scope, resolve
from bridge.doors.langgraph.store import BridgeStore

__all__ = [
    "BridgeStore", "AuthUserIdentity", "FixedIdentity", "IdentitySource", "NamespaceRefused", "UnknownNamespace",
    "StoreIdentityMissing", "UnsupportedStoreOperation", "HEADS", "resolve", "namespace_of_scope",
]
