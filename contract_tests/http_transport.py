"""`--via http`: the contract suite driven through the memory service instead of the library.

`HttpBridge(bridge)` has the `MemoryBridge` method surface the suite uses (recall, remember,
capture, forget, inject, write_back, grant, ...), and every call goes through the service's
whole HTTP stack — `bridge.doors.http.create_app` with the edge middleware (authentication, size
limits, problem+json), routing, request models and response models — over httpx's ASGI
transport (no socket, so it runs on the test's own event loop next to backends bound to it).

Identity travels the way a production gateway sends it: every `MemoryIdentity` the suite got
from a credential is re-asserted in `X-VB-*` headers signed with a secret only this transport
and its service share, the body's SHA-256 included; the service authenticates them with
`GatewayProvider`, so what the bridge sees is what the service built from a verified
credential. Problem responses are turned back into the error tree by the `error` class name
(the most derived class of that name), else by status, so `pytest.raises(NotPermitted)` holds
over HTTP as it does in-process. Attributes the suite reads directly (`state`, `sessions`,
`backend`, `policy`) are the wrapped bridge's.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, Iterable, Mapping, Sequence

import httpx

from adapters import errors as adapter_errors
from adapters.scopes import ScopeKey
from bridge import errors as bridge_errors
from bridge.facade import MemoryBridge
from bridge.results import CaptureResult, MemoryRef, RecalledMemory, RecallResult, WriteResult
from bridge.state.records import AuditEvent, Grant, InjectDepth, InjectionManifest
from bridge.operations.fields import memory_ref
from identity import errors as identity_errors
from identity.model import MemoryIdentity
from identity.providers.gateway import GatewayProvider, sign_gateway_headers

__all__ = ["HttpBridge", "error_from_problem"]

_BY_STATUS: dict[int, type[Exception]] = {
    400: bridge_errors.InvalidInput, 401: bridge_errors.Unauthenticated, 403: bridge_errors.NotPermitted, 404: bridge_errors.NotFound,
    409: bridge_errors.Conflict, 413: bridge_errors.InvalidInput, 414: bridge_errors.InvalidInput, 422: bridge_errors.InvalidInput,
    429: bridge_errors.Unavailable, 503: bridge_errors.Unavailable,
}


def _error_class(name: str) -> type[Exception] | None:
    from bridge.doors.http import problems

    found = [getattr(m, name) for m in (bridge_errors, identity_errors, adapter_errors, problems) if isinstance(getattr(m, name, None), type)]
    found = [c for c in found if issubclass(c, bridge_errors.VikingBridgeError)]
    for c in found:
        if all(issubclass(c, other) for other in found):
            return c
    return None


def error_from_problem(response: httpx.Response) -> Exception:
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = str(body.get("detail") or body.get("title") or response.text[:300])
    cls = _error_class(str(body.get("error", ""))) if body.get("error") else None
    if cls is not None:
        try:
            if issubclass(cls, bridge_errors.RecallIncomplete):
                return cls(message, tuple(ScopeKey.parse(s) for s in body.get("failed_scopes", ())))
            if issubclass(cls, bridge_errors.QuotaExceeded):
                return cls(message, **{k: body[k] for k in ("level", "measure", "used", "requested", "limit")})
            return cls(message)
        except TypeError:
            pass
    return _BY_STATUS.get(response.status_code, bridge_errors.VikingBridgeError)(message)


def _refs(refs: Sequence[Any] | None) -> list[dict[str, str]] | None:
    if refs is None:
        return None
    out = []
    for r in refs:
        key, memory_id = memory_ref(r)
        out.append({"scope": str(key), "memory_id": memory_id})
    return out


def _recalled(d: Mapping[str, Any]) -> RecalledMemory:
    fields = dict(d)
    fields["derived_from"] = tuple(fields.get("derived_from", ()))
    fields["conflicts_with"] = tuple(MemoryRef(**c) for c in fields.get("conflicts_with", ()))
    fields["duplicates"] = tuple(MemoryRef(**c) for c in fields.get("duplicates", ()))
    if "visible_to" in fields:
        fields["visible_to"] = tuple(fields["visible_to"])
    return RecalledMemory(**fields)


class HttpBridge:
    """The `MemoryBridge` surface over the service's HTTP API.

    `HttpBridge(bridge)` serves `bridge` in-process (the service's real ASGI app over httpx's
    ASGI transport). `HttpBridge(bridge, client=..., secret=...)` sends the same requests with
    `client` instead — contract_tests/service_transport.py points it at a real `serve` process
    that shares `secret` — so the request/response mapping below exists once for both."""

    def __init__(self, bridge: MemoryBridge, *, client: httpx.AsyncClient | None = None, secret: str | None = None) -> None:
        self.inner = bridge
        if client is not None:
            if not secret:
                raise ValueError("a client of a running service needs the gateway secret that service verifies")
            self._secret, self._client = secret, client
            return
        from bridge.doors.http.app import create_app
        from bridge.doors.http.auth import EdgeAuthenticator
        from bridge.doors.http.settings import ServiceSettings

        self._secret = secrets.token_hex(32)
        auth = EdgeAuthenticator({"gateway": GatewayProvider(self._secret)})
        self.app = create_app(bridge, auth, ServiceSettings(rate_burst=0, max_body_bytes=16 * 1_048_576))
        self.app.state.ctx.owns_bridge = False
        self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://vb-contract.invalid", timeout=120)

    def _received(self, response: httpx.Response) -> None:
        """Called with every response before it is mapped back (a hook for transports that keep them)."""

    def __getattr__(self, name: str) -> Any:  # state, sessions, backend, policy, runtime, limits
        return getattr(self.inner, name)

    async def _call(self, identity: MemoryIdentity, method: str, path: str, *, body: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        if not isinstance(identity, MemoryIdentity):
            raise bridge_errors.InvalidInput("the first argument must be an authenticated MemoryIdentity")
        content = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
        request = self._client.build_request(method, path, params={k: v for k, v in (params or {}).items() if v is not None}, content=content or None)
        target = request.url.raw_path.decode("ascii")
        request.headers.update(sign_gateway_headers(
            self._secret, method=method, path=target, tenant_id=identity.tenant_id, user_id=identity.user_id, agent_id=identity.agent_id,
            department_ids=identity.department_ids, workspace_id=identity.workspace_id, roles=identity.roles, session_id=identity.session_id,
            permission_version=identity.permission_version, task_id=identity.task_id, body=content, nonce=secrets.token_hex(16),
        ))
        if content:
            request.headers["content-type"] = "application/json"
        response = await self._client.send(request)
        self._received(response)
        if response.status_code >= 400:
            raise error_from_problem(response)
        return response.json()

    # -- the MemoryBridge surface the suite uses ---------------------------------------------
    async def recall(self, identity: MemoryIdentity, query: str, *, purpose: Any = "chat", budget_tokens: int | None = None, kinds: Iterable[Any] | None = None,
                     include_scopes: Iterable[Any] = (), manifest_id: str | None = None, allow_partial: bool = False, min_score: float | None = None) -> RecallResult:
        body = {"query": query, "purpose": getattr(purpose, "value", purpose), "budget_tokens": budget_tokens, "kinds": None if kinds is None else [getattr(k, "value", k) for k in kinds],
                "include_scopes": [str(s) for s in include_scopes], "manifest_id": manifest_id, "allow_partial": allow_partial, "min_score": min_score}
        r = await self._call(identity, "POST", "/api/v1/recall", body=body)
        return RecallResult(identity=r["identity"], purpose=r["purpose"], query=query, items=tuple(_recalled(m) for m in r["memories"]), context=r["context"],
                            tokens_used=r["tokens_used"], scopes_searched=tuple(r["scopes_searched"]), partial=r["partial"], failed_scopes=tuple(r["failed_scopes"]), guard_alarms=r["guard_alarms"], expired_dropped=r.get("expired_dropped", 0))

    async def remember(self, identity: MemoryIdentity, content: str, kind: Any, *, visibility: Any = None, department_id: str | None = None, idempotency_key: str | None = None,
                       metadata: Mapping[str, Any] | None = None, confidence: float = 1.0, memory_type: str | None = None, visible_to: Sequence[str] | None = None,
                       team_id: str | None = None, expires_at: float | None = None, ttl_s: float | None = None) -> WriteResult:
        body = {"content": content, "kind": getattr(kind, "value", kind), "visibility": getattr(visibility, "value", visibility), "department_id": department_id,
                "idempotency_key": idempotency_key, "metadata": dict(metadata or {}), "confidence": confidence, "expires_at": expires_at, "ttl_s": ttl_s}
        body.update({k: v for k, v in (("memory_type", memory_type), ("visible_to", None if visible_to is None else list(visible_to)), ("team_id", team_id)) if v is not None})
        return WriteResult(**await self._call(identity, "POST", "/api/v1/memories", body=body))

    async def capture(self, identity: MemoryIdentity, messages: Sequence[Any], *, idempotency_key: str | None = None, memory_type: str | None = None,
                      visible_to: Sequence[str] | None = None, team_id: str | None = None, expires_at: float | None = None,
                      ttl_s: float | None = None) -> CaptureResult:
        wire = [m.model_dump() if hasattr(m, "model_dump") else dict(m) for m in messages]
        body: dict[str, Any] = {"messages": wire, "idempotency_key": idempotency_key, "expires_at": expires_at, "ttl_s": ttl_s}
        body.update({k: v for k, v in (("memory_type", memory_type), ("visible_to", None if visible_to is None else list(visible_to)), ("team_id", team_id)) if v is not None})
        return CaptureResult(**await self._call(identity, "POST", "/api/v1/capture", body=body))

    # -- sharing and teams and the read API the sharing tests use -------------------
    async def set_visible_to(self, identity: MemoryIdentity, ref: Any, visible_to: Sequence[str]) -> Any:
        from bridge.results import ShareResult

        key, memory_id = memory_ref(ref)
        return ShareResult(**await self._call(identity, "PUT", f"/api/v1/memories/{memory_id}/visible-to", params={"scope": str(key)}, body={"visible_to": list(visible_to)}))

    async def set_team_members(self, admin: MemoryIdentity, team_id: str, agent_ids: Sequence[str]) -> Any:
        from bridge.results import TeamResult

        return TeamResult(**await self._call(admin, "PUT", f"/api/v1/teams/{team_id}", body={"agent_ids": list(agent_ids)}))

    async def add_team_member(self, admin: MemoryIdentity, team_id: str, member_agent_id: str) -> Any:
        from bridge.results import TeamResult

        return TeamResult(**await self._call(admin, "POST", f"/api/v1/teams/{team_id}/members", body={"member_agent_id": member_agent_id}))

    async def remove_team_member(self, admin: MemoryIdentity, team_id: str, member_agent_id: str) -> Any:
        from bridge.results import TeamResult

        return TeamResult(**await self._call(admin, "DELETE", f"/api/v1/teams/{team_id}/members/{member_agent_id}"))

    async def get_memory(self, identity: MemoryIdentity, ref: Any) -> Any:
        from bridge.results import MemoryRecord

        key, memory_id = memory_ref(ref)
        return MemoryRecord(**await self._call(identity, "GET", f"/api/v1/memories/{memory_id}", params={"scope": str(key)}))

    async def list_memories(self, identity: MemoryIdentity, scope: Any, *, cursor: str | None = None, limit: int = 50, status: str = "active") -> Any:
        from bridge.results import MemoryPage

        return MemoryPage(**await self._call(identity, "GET", "/api/v1/memories", params={"scope": str(scope), "cursor": cursor, "limit": limit, "status": status}))

    async def purge_expired(self, identity: MemoryIdentity, *, max_deletions: int = 1000) -> Any:
        from bridge.results import PurgeReport

        return PurgeReport(**await self._call(identity, "POST", "/api/v1/purge-expired", params={"max_deletions": max_deletions}))

    async def forget(self, identity: MemoryIdentity, ref: Any) -> bool:
        key, memory_id = memory_ref(ref)
        return (await self._call(identity, "DELETE", f"/api/v1/memories/{memory_id}", params={"scope": str(key)}))["deleted"]

    async def forget_subject(self, identity: MemoryIdentity, subject_user_id: str) -> int:
        return (await self._call(identity, "POST", "/api/v1/forget-subject", body={"subject_user_id": subject_user_id}))["count"]

    async def approve(self, identity: MemoryIdentity, ref: Any) -> WriteResult:
        key, memory_id = memory_ref(ref)
        return WriteResult(**await self._call(identity, "POST", f"/api/v1/memories/{memory_id}/approve", params={"scope": str(key)}))

    async def promote(self, identity: MemoryIdentity, ref: Any, to: Any, *, department_id: str | None = None) -> WriteResult:
        key, memory_id = memory_ref(ref)
        body = {"to": getattr(to, "value", to), "department_id": department_id}
        return WriteResult(**await self._call(identity, "POST", f"/api/v1/memories/{memory_id}/promote", params={"scope": str(key)}, body=body))

    async def grant(self, admin: MemoryIdentity, grantee_user_id: str, scope: Any, *, ttl_seconds: float, reason: str, grantee_agent_id: str | None = None) -> Grant:
        g = await self._call(admin, "POST", "/api/v1/grants", body={"grantee_user_id": grantee_user_id, "scope": str(scope), "ttl_seconds": ttl_seconds, "reason": reason, "grantee_agent_id": grantee_agent_id})
        return Grant(g["grant_id"], g["tenant_id"], g["grantee_user_id"], g["grantee_agent_id"], ScopeKey.parse(g["scope"]), g["issued_by"], g["reason"], g["issued_at"], g["expires_at"], g["revoked_at"])

    async def revoke_grant(self, admin: MemoryIdentity, grant_id: str) -> None:
        await self._call(admin, "DELETE", f"/api/v1/grants/{grant_id}")

    async def inject(self, parent: MemoryIdentity, child_agent_id: str, task: str, *, depth: Any = InjectDepth.STANDARD, memory_refs: Sequence[Any] | None = None,
                     from_manifest_id: str | None = None, ttl_seconds: float = 3600, may_reinject: bool = False) -> InjectionManifest:
        body = {"agent_id": child_agent_id, "task": task, "depth": getattr(depth, "value", depth), "memory_refs": _refs(memory_refs), "from_manifest_id": from_manifest_id,
                "ttl_seconds": ttl_seconds, "may_reinject": may_reinject}
        m = await self._call(parent, "POST", "/api/v1/inject-context", body=body)
        entries = tuple((ScopeKey.parse(x["scope"]), x["memory_id"]) for x in m["memories"])
        return InjectionManifest(m["manifest_id"], parent.tenant_id, parent.user_id, parent.agent_id, m["child_agent_id"], m["task"], InjectDepth(m["depth"]), entries,
                                 m["may_reinject"], m["created_at"], m["expires_at"], parent_manifest_id=m["parent_manifest_id"])

    async def role_inject(self, parent: MemoryIdentity, child_agent_id: str, task: str, *, depth: Any = None, carry: Sequence[Any] = (),
                          ttl_seconds: float = 3600, may_reinject: bool = False) -> Any:
        """`POST /api/v1/roles/inject`: the federated manifest, rebuilt from what the route returns."""
        from bridge.results import FederatedManifest
        from bridge.roles.planner import ManifestPlan
        from bridge.roles.router import Route

        body = {"agent_id": child_agent_id, "task": task, "depth": getattr(depth, "value", depth), "carry": _refs(carry) or [],
                "ttl_seconds": ttl_seconds, "may_reinject": may_reinject}
        m = await self._call(parent, "POST", "/api/v1/roles/inject", body=body)
        entries = tuple((ScopeKey.parse(x["scope"]), x["memory_id"]) for x in m["memories"])
        manifest = InjectionManifest(m["manifest_id"], parent.tenant_id, parent.user_id, parent.agent_id, m["child_agent_id"], task, InjectDepth(m["depth"]),
                                     entries, may_reinject, m["expires_at"] - ttl_seconds, m["expires_at"])
        plan = ManifestPlan(entries[: len(entries) - m["carried"]], slots=m["slots"], counts=m["counts"])
        return FederatedManifest(manifest, Route(m["route"]["primary"], tuple(m["route"]["auxiliary"])), plan, InjectDepth(m["depth"]), entries[len(entries) - m["carried"]:])

    async def revoke_manifest(self, identity: MemoryIdentity, manifest_id: str) -> None:
        await self._call(identity, "DELETE", f"/api/v1/manifests/{manifest_id}")

    async def write_back(self, child: MemoryIdentity, manifest_id: str, content: str, kind: Any, *, visibility: Any = None, idempotency_key: str | None = None) -> WriteResult:
        body = {"manifest_id": manifest_id, "content": content, "kind": getattr(kind, "value", kind), "visibility": getattr(visibility, "value", visibility), "idempotency_key": idempotency_key}
        return WriteResult(**await self._call(child, "POST", "/api/v1/write-back", body=body))

    async def audit_events(self, identity: MemoryIdentity, *, action: str | None = None, memory_id: str | None = None, limit: int = 100, since_seq: int = 0) -> list[AuditEvent]:
        rows = await self._call(identity, "GET", "/api/v1/audit", params={"action": action, "memory_id": memory_id, "limit": limit, "since_seq": since_seq})
        return [AuditEvent(r["seq"], r["ts"], r["tenant_id"], r["actor"], r["session_id"], r["action"], tuple(r["memory_ids"]), tuple(r["scopes"]), tuple(r["grant_ids"]), r["detail"]) for r in rows]

    async def start_session(self, identity: MemoryIdentity) -> MemoryIdentity:
        return identity.with_session((await self._call(identity, "POST", "/api/v1/sessions"))["session_id"])

    async def fork_session(self, identity: MemoryIdentity, parent_session_id: str | None = None) -> MemoryIdentity:
        return identity.with_session((await self._call(identity, "POST", "/api/v1/sessions/fork", body={"parent_session_id": parent_session_id}))["session_id"])

    async def aclose(self) -> None:
        await self._client.aclose()
        await self.inner.aclose()
