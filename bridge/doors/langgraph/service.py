"""The store over the memory service: the six operations `BridgeStore` runs, as HTTP calls.

    store = BridgeStore.over_service("https://memory.internal", api_key="vbk_...")   # or token=

The credential is the only identity: the service verifies it on every call, so nothing this
client believes about itself can widen anything. It still needs to know whose namespaces are
whose (to refuse ("memories", "bob") for alice before asking): `whoami()` asks the service
(`GET /api/v1/admin/whoami`: tenant, user, agent, workspace, departments, roles, default scopes)
and builds a local, *informational* `MemoryIdentity` from the answer. If that picture were wrong, a write
would land where the credential allows, the store would see it is not the namespace's scope,
forget it and refuse (store.py) — fail closed either way.

Never logs the credential; problem+json answers become members of the error tree by the
problem's `error` name, else by status.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from adapters.scopes import ScopeKey
from bridge import errors as bridge_errors
from bridge.results import MemoryPage, MemoryRecord
from bridge.doors.langgraph.errors import UnsupportedStoreOperation
from bridge.results import RecalledMemory, RecallResult, WriteResult
from bridge.operations import Forget, Operation, Recall, Remember
from bridge.operations.reads import EditMemory, FindByKey, ListMemories
from identity.model import MemoryIdentity

__all__ = ["ServiceBridge", "ServiceIdentity"]

_BY_STATUS: dict[int, type[bridge_errors.VikingBridgeError]] = {
    400: bridge_errors.InvalidInput, 401: bridge_errors.Unauthenticated, 403: bridge_errors.NotPermitted, 404: bridge_errors.NotFound,
    409: bridge_errors.Conflict, 413: bridge_errors.InvalidInput, 422: bridge_errors.InvalidInput, 429: bridge_errors.Unavailable,
    503: bridge_errors.Unavailable,
}


def _problem(response: httpx.Response) -> bridge_errors.VikingBridgeError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = str(body.get("detail") or body.get("title") or response.reason_phrase)
    named = getattr(bridge_errors, str(body.get("error", "")), None)
    fallback = _BY_STATUS.get(response.status_code, bridge_errors.VikingBridgeError)
    cls = named if isinstance(named, type) and issubclass(named, fallback) else fallback
    try:
        return cls(message)
    except TypeError:  # an error class that needs more than a message
        return fallback(message)


class ServiceBridge:
    """`execute(identity, op)` for Remember, EditMemory, Forget, FindByKey, ListMemories and Recall over HTTP."""

    def __init__(self, url: str, *, api_key: str | None = None, token: str | None = None, http_client: httpx.AsyncClient | None = None) -> None:
        if (api_key is None) == (token is None):
            raise bridge_errors.InvalidInput("the service store needs exactly one of api_key or token")
        self._headers = {"X-API-Key": api_key} if api_key else {"Authorization": f"Bearer {token}"}
        self._client = http_client or httpx.AsyncClient(base_url=url.rstrip("/"), timeout=60)
        self._defaults: frozenset[ScopeKey] | None = None
        self._me: MemoryIdentity | None = None

    def __repr__(self) -> str:  # never the credential
        return f"ServiceBridge({self._client.base_url})"

    async def _call(self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        try:
            r = await self._client.request(method, "/api/v1" + path, json=body, headers=self._headers, params={k: v for k, v in (params or {}).items() if v is not None})
        except httpx.HTTPError as exc:
            raise bridge_errors.Unavailable(f"cannot reach the memory service: {type(exc).__name__}") from None
        if r.status_code >= 400:
            raise _problem(r)
        return r.json()

    async def execute(self, identity: MemoryIdentity, op: Operation) -> Any:
        """`identity` is informational here: the service acts as the credential's identity."""
        if isinstance(op, Remember):
            body = {"content": op.content, "kind": op.kind.value, "visibility": None if op.visibility is None else op.visibility.value,
                    "department_id": op.department_id, "idempotency_key": op.idempotency_key, "metadata": dict(op.metadata), "confidence": op.confidence,
                    "expires_at": op.expires_at, "ttl_s": op.ttl_s}
            body.update({k: v for k, v in (("memory_type", op.memory_type), ("visible_to", None if op.visible_to is None else list(op.visible_to)),
                                           ("team_id", op.team_id)) if v is not None})
            return WriteResult(**await self._call("POST", "/memories", body=body))
        if isinstance(op, EditMemory):
            key, memory_id = op.ref
            body = {"content": op.content, "metadata": None if op.metadata is None else dict(op.metadata), "confidence": op.confidence}
            return MemoryRecord(**await self._call("PATCH", f"/memories/{memory_id}", params={"scope": str(key)}, body=body))
        if isinstance(op, Forget):
            key, memory_id = op.ref
            return (await self._call("DELETE", f"/memories/{memory_id}", params={"scope": str(key)}))["deleted"]
        if isinstance(op, FindByKey):
            return MemoryRecord(**await self._call("GET", f"/memories/by-key/{quote(op.key, safe='')}", params={"scope": str(op.scope)}))
        if isinstance(op, ListMemories):
            r = await self._call("GET", "/memories", params={"scope": str(op.scope), "cursor": op.cursor, "limit": op.limit, "status": op.status})
            return MemoryPage(memories=tuple(MemoryRecord(**m) for m in r["memories"]), next_cursor=r.get("next_cursor"))
        if isinstance(op, Recall):
            body = {"query": op.query, "purpose": op.purpose.value, "budget_tokens": op.budget_tokens, "kinds": None if op.kinds is None else sorted(op.kinds),
                    "include_scopes": [str(s) for s in op.include_scopes], "manifest_id": op.manifest_id, "allow_partial": op.allow_partial, "min_score": op.min_score,
                    "only_scopes": None if op.only_scopes is None else [str(s) for s in op.only_scopes]}
            r = await self._call("POST", "/recall", body=body)
            items = tuple(RecalledMemory(**{**m, "derived_from": tuple(m.get("derived_from", ())), "conflicts_with": (), "duplicates": ()}) for m in r["memories"])
            return RecallResult(identity=r["identity"], purpose=r["purpose"], query=op.query, items=items, context=r["context"], tokens_used=r["tokens_used"],
                                scopes_searched=tuple(r["scopes_searched"]), partial=r["partial"], failed_scopes=tuple(r["failed_scopes"]), guard_alarms=r["guard_alarms"])
        raise UnsupportedStoreOperation(f"the service store does not run {type(op).__name__}")

    async def whoami(self) -> MemoryIdentity:
        """Who the credential is, as the service's `GET /api/v1/admin/whoami` reports it."""
        if self._me is None:
            r = await self._call("GET", "/admin/whoami")
            self._me = MemoryIdentity(
                tenant_id=r["tenant_id"], user_id=r["user_id"], agent_id=r["agent_id"], workspace_id=r.get("workspace_id"),
                department_ids=frozenset(r["department_ids"]), roles=frozenset(r["roles"]), session_id="service-client",
            )
            self._defaults = frozenset(ScopeKey.parse(s) for s in r.get("readable_scopes", ()))
        return self._me

    def reads_by_default(self, identity: MemoryIdentity, scope: ScopeKey) -> bool:
        return self._defaults is not None and scope in self._defaults

    async def aclose(self) -> None:
        await self._client.aclose()


class ServiceIdentity:
    """The identity source of a service store: the credential's own identity (`whoami`)."""

    def __init__(self, service: ServiceBridge) -> None:
        self.service = service

    async def identity(self) -> MemoryIdentity:
        return await self.service.whoami()
