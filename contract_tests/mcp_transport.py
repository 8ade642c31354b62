"""`--via mcp`: the contract suite driven through the MCP server's tools instead of the library.

`McpBridge(bridge)` has the `MemoryBridge` method surface the suite uses. The calls the MCP server
offers as tools — recall, remember, forget, inject (the `inject_context` tool), write_back,
list_memories — go through the real server (`bridge.doors.mcp.build_server`: strict tool
schemas, argument -> operation mapping, result and error serialisation) with the MCP SDK's own
`Client`, in-process (the SDK's in-memory connection, on the test's event loop next to backends
bound to it). Everything else the suite does (grants, capture, set_visible_to, team membership,
purge_expired, get_memory, sessions, audit, state) has no MCP tool and goes to the wrapped bridge,
as an operator's other door would. A task-scoped identity (`task_id`) travels as the token's
`task` claim, so the server runs it in that task.

Identity travels as a credential, the way a host configures one: each `MemoryIdentity` the suite
got from a credential is re-issued as a JWT signed by a key only this transport holds, verified
by the bridge's `JwtProvider` through the MCP server's own `JwtTokenVerifier`, and the connection
runs as what the provider verified (as a stdio server process runs as its API key) — never as an
argument. A `BaseException` that is no `Exception` (a simulated crash) tears the in-process
connection down and is re-raised as itself, as httpx's ASGI transport re-raises one. Tool errors are turned back into the error tree by class name (the most derived class
of that name), so `pytest.raises(NotPermitted)` holds through MCP as it does in-process.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Iterable, Sequence

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from adapters.scopes import ScopeKey
from bridge import errors as bridge_errors
from bridge.facade import MemoryBridge
from bridge.results import RecallResult, WriteResult
from bridge.state.records import InjectDepth, InjectionManifest
from bridge.operations.fields import memory_ref
from contract_tests.http_transport import _error_class, _recalled, _refs
from identity.model import MemoryIdentity
from identity.providers.jwks import StaticKeys, VerificationKey
from identity.providers.jwt import ClaimMapping, JwtProvider

__all__ = ["McpBridge"]

_ISSUER, _AUDIENCE = "https://contract-suite.invalid/mcp", "viking-bridge-mcp-contract"
_CLAIMS = ClaimMapping(tenant_id="tid", user_id="sub", department_ids="groups", workspace_id="ws", agent_id="azp", roles="roles",
                       session_id="sid", permission_version="pv", task_id="task")


@functools.cache
def _signing_key() -> Any:
    return ec.generate_private_key(ec.SECP256R1())


def _error(body: dict[str, Any]) -> Exception:
    message = str(body.get("detail", ""))
    cls = _error_class(str(body.get("error", ""))) or bridge_errors.VikingBridgeError
    try:
        if issubclass(cls, bridge_errors.RecallIncomplete):
            return cls(message, tuple(ScopeKey.parse(s) for s in body.get("failed_scopes", ())))
        if issubclass(cls, bridge_errors.QuotaExceeded):
            return cls(message, **{k: body[k] for k in ("level", "measure", "used", "requested", "limit")})
        return cls(message)
    except TypeError:
        return bridge_errors.VikingBridgeError(f"{body.get('error')}: {message}")


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    return [leaf for e in group.exceptions for leaf in (_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])]


def _refuse_non_finite(value: Any, path: str = "arguments") -> None:
    """JSON cannot carry NaN or Infinity, and the MCP SDK's client silently sends them as `null`
    (so `ttl_s=nan` would arrive as "no expiry"): a client must refuse them before sending, as
    this one does, rather than let the server see a different call."""
    if isinstance(value, float) and not math.isfinite(value):
        raise bridge_errors.InvalidInput(f"{path}: {value!r} is not a JSON number (MCP carries JSON)")
    if isinstance(value, dict):
        for k, v in value.items():
            _refuse_non_finite(v, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _refuse_non_finite(v, f"{path}[{i}]")


class McpBridge:
    def __init__(self, bridge: MemoryBridge) -> None:
        from bridge.doors.mcp.credentials import JwtTokenVerifier

        self.inner = bridge
        key = _signing_key()
        pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        provider = JwtProvider(keys=StaticKeys([VerificationKey.from_pem(pem)]), issuer=_ISSUER, audience=_AUDIENCE, claims=_CLAIMS, algorithms=["ES256"])
        self._verifier = JwtTokenVerifier(provider, sessionless=False)

    def __getattr__(self, name: str) -> Any:  # grant, capture, sessions, audit, state, backend, policy: no MCP tool
        return getattr(self.inner, name)

    def _token(self, who: MemoryIdentity) -> str:
        now = int(time.time())
        claims = {"iss": _ISSUER, "aud": _AUDIENCE, "iat": now, "exp": now + 600, "sub": who.user_id, "tid": who.tenant_id, "azp": who.agent_id,
                  "groups": sorted(who.department_ids), "roles": sorted(who.roles), "sid": who.session_id}
        if who.workspace_id:
            claims["ws"] = who.workspace_id
        if who.permission_version:
            claims["pv"] = who.permission_version
        if who.task_id is not None:
            claims["task"] = who.task_id
        return jwt.encode(claims, _signing_key(), algorithm="ES256")

    async def _tool(self, identity: MemoryIdentity, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from mcp import Client

        from bridge.doors.mcp.server import build_server, fixed_identity

        if not isinstance(identity, MemoryIdentity):
            raise bridge_errors.InvalidInput("the first argument must be an authenticated MemoryIdentity")
        _refuse_non_finite(arguments)
        token = await self._verifier.verify_token(self._token(identity))
        if token is None:
            raise bridge_errors.Unauthenticated("the MCP transport's token was refused")
        server = build_server(self.inner, fixed_identity(token.identity))  # type: ignore[attr-defined]
        try:
            async with Client(server) as client:
                result = await client.call_tool(name, {k: v for k, v in arguments.items() if v is not None})
        except BaseExceptionGroup as group:  # a process-killing fault (a simulated crash) in the server: the test's to see
            leaves = _leaves(group)
            if len(leaves) == 1 and not isinstance(leaves[0], Exception):
                raise leaves[0] from None
            raise
        body = result.structured_content or {}
        if result.is_error:
            raise _error(body)
        return body

    # -- the MemoryBridge surface the MCP tools cover -------------------------------------------
    async def recall(self, identity: MemoryIdentity, query: str, *, purpose: Any = "chat", budget_tokens: int | None = None, kinds: Iterable[Any] | None = None,
                     include_scopes: Iterable[Any] = (), manifest_id: str | None = None, allow_partial: bool = False, min_score: float | None = None,
                     only_scopes: Iterable[Any] | None = None) -> RecallResult:
        args = {"query": query, "purpose": getattr(purpose, "value", purpose), "budget_tokens": budget_tokens,
                "kinds": None if kinds is None else [getattr(k, "value", k) for k in kinds], "include_scopes": [str(s) for s in include_scopes],
                "manifest_id": manifest_id, "allow_partial": allow_partial, "min_score": min_score,
                "only_scopes": None if only_scopes is None else [str(s) for s in only_scopes]}
        r = await self._tool(identity, "recall", args)
        return RecallResult(identity=r["identity"], purpose=r["purpose"], query=query, items=tuple(_recalled(m) for m in r["memories"]), context=r["context"],
                            tokens_used=r["tokens_used"], scopes_searched=tuple(r["scopes_searched"]), partial=r["partial"], failed_scopes=tuple(r["failed_scopes"]),
                            guard_alarms=r["guard_alarms"], expired_dropped=r.get("expired_dropped", 0))

    async def remember(self, identity: MemoryIdentity, content: str, kind: Any, *, visibility: Any = None, department_id: str | None = None,
                       idempotency_key: str | None = None, metadata: Any = None, confidence: float = 1.0, memory_type: str | None = None,
                       visible_to: Sequence[str] | None = None, team_id: str | None = None, expires_at: float | None = None,
                       ttl_s: float | None = None) -> WriteResult:
        args = {"content": content, "kind": getattr(kind, "value", kind), "visibility": getattr(visibility, "value", visibility), "department_id": department_id,
                "idempotency_key": idempotency_key, "metadata": dict(metadata or {}), "confidence": confidence, "memory_type": memory_type,
                "visible_to": None if visible_to is None else list(visible_to), "team_id": team_id, "expires_at": expires_at, "ttl_s": ttl_s}
        return WriteResult(**await self._tool(identity, "remember", args))

    async def forget(self, identity: MemoryIdentity, ref: Any) -> bool:
        key, memory_id = memory_ref(ref)
        return bool((await self._tool(identity, "forget", {"scope": str(key), "memory_id": memory_id}))["deleted"])

    async def inject(self, parent: MemoryIdentity, child_agent_id: str, task: str, *, depth: Any = InjectDepth.STANDARD, memory_refs: Sequence[Any] | None = None,
                     from_manifest_id: str | None = None, ttl_seconds: float = 3600, may_reinject: bool = False) -> InjectionManifest:
        args = {"child_agent": child_agent_id, "task": task, "depth": getattr(depth, "value", depth), "memory_refs": _refs(memory_refs),
                "from_manifest_id": from_manifest_id, "ttl_seconds": ttl_seconds, "may_reinject": may_reinject}
        m = await self._tool(parent, "inject_context", args)
        entries = tuple((ScopeKey.parse(x["scope"]), x["memory_id"]) for x in m["memories"])
        return InjectionManifest(m["manifest_id"], parent.tenant_id, parent.user_id, parent.agent_id, m["child_agent_id"], m["task"], InjectDepth(m["depth"]), entries,
                                 m["may_reinject"], m["created_at"], m["expires_at"], parent_manifest_id=m["parent_manifest_id"])

    async def write_back(self, child: MemoryIdentity, manifest_id: str, content: str, kind: Any, *, visibility: Any = None, idempotency_key: str | None = None) -> WriteResult:
        args = {"manifest_id": manifest_id, "content": content, "kind": getattr(kind, "value", kind), "visibility": getattr(visibility, "value", visibility),
                "idempotency_key": idempotency_key}
        return WriteResult(**await self._tool(child, "write_back", args))

    async def list_memories(self, identity: MemoryIdentity, scope: Any, *, cursor: str | None = None, limit: int = 50, status: str = "active") -> Any:
        from bridge.results import MemoryPage

        return MemoryPage(**await self._tool(identity, "list_memories", {"scope": str(scope), "cursor": cursor, "limit": limit, "status": status}))

    async def aclose(self) -> None:
        await self.inner.aclose()
