"""A small async HTTP client for the OpenViking 0.5.2 REST API (httpx, pooled, retried).

It speaks the wire protocol and nothing else: it never decides who may see what, never builds a
URI from unvalidated input (callers pass URIs built by `adapters.openviking.mapping`), and never
reads configuration from the environment or `~/.openviking` (unlike the official SDK, which
falls back to `OPENVIKING_*` variables and `ovcli.conf` — dangerous in a multi-user process).

Every call names its credential explicitly (`Auth`): a per-user key in api_key mode, or the root
key plus identity headers in trusted mode. Keys are `SecretKey` objects: they never appear in a
repr, a log line or an exception message.

Envelopes: `{"status":"ok","result":...}` -> result; `{"status":"error","error":{code,message}}`
-> the typed exception for `code` (see `adapters.openviking.errors`).
Transport, retries and redaction are the shared HTTP layer (`adapters.shared.http`): `http_client=` an
`httpx.AsyncClient` or `transport=` an httpx transport; `adapters.shared.http.RetryPolicy` retries 429,
503/5xx and transport errors with backoff and jitter, honouring Retry-After; calls that are not
idempotent are retried only when the server cannot have acted (connect errors, 429, 503).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import httpx

from adapters.errors import BackendMisconfigured, InvalidRequest
from adapters.shared.http import REDACTED, RetryPolicy, http_client_for, parse_retry_after, redact, send
from adapters.openviking.errors import (
    OpenVikingError,
    OVNotSent,
    OVProtocolError,
    OVRateLimited,
    OVServerError,
    OVTransportError,
    error_for,
)

__all__ = ["SecretKey", "Auth", "RetryPolicy", "OpenVikingClient", "TaskTimeout"]  # RetryPolicy: adapters.shared.http

_API = "/api/v1"


class SecretNotSerialisable(InvalidRequest, TypeError):
    """A SecretKey was pickled; keys never leave the process by accident (also a TypeError, as
    the pickle protocol expects)."""


class SecretKey:
    """An API key that will not print itself. `reveal()` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise BackendMisconfigured("an API key must be a non-empty string", backend="openviking")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"SecretKey({REDACTED!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("SecretKey", self._value))

    def __reduce__(self) -> Any:  # never pickle a key by accident
        raise SecretNotSerialisable("SecretKey cannot be pickled", backend="openviking")


@dataclass(frozen=True)
class Auth:
    """The credential for one call. In trusted mode `account`/`user` are believed by the server."""

    key: SecretKey = field(repr=False)
    account: str | None = None
    user: str | None = None
    actor_peer: str | None = None
    role: str | None = None

    def headers(self) -> dict[str, str]:
        out = {"X-API-Key": self.key.reveal()}
        if self.account:
            out["X-OpenViking-Account"] = self.account
        if self.user:
            out["X-OpenViking-User"] = self.user
        if self.actor_peer:
            out["X-OpenViking-Actor-Peer"] = self.actor_peer
        if self.role:
            out["X-OpenViking-Role"] = self.role
        return out

    def with_peer(self, peer: str | None) -> "Auth":
        return Auth(self.key, self.account, self.user, peer, self.role)


class TaskTimeout(OVServerError):
    """A background task did not finish before its deadline."""

    code = "DEADLINE_EXCEEDED"


class OpenVikingClient:
    """Async client. Share one per server: the httpx pool is reused across principals."""

    def __init__(
        self,
        base_url: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: httpx.Timeout | float = httpx.Timeout(30.0, connect=5.0),
        max_connections: int = 32,
        retry: RetryPolicy | None = None,
        backend_name: str = "openviking",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.backend_name = backend_name
        self._http, self._owns_http = http_client_for(
            http_client=http_client, transport=transport, timeout=timeout, max_connections=max_connections
        )

    def __repr__(self) -> str:
        return f"OpenVikingClient({self.base_url!r})"

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    # -- the one place requests are made --------------------------------------------------
    async def request(
        self,
        method: str,
        path: str,
        *,
        auth: Auth | None,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotent: bool = True,
        envelope: bool = True,
    ) -> Any:
        async def once() -> Any:
            return await self._once(method, path, auth=auth, params=params, json=json, envelope=envelope)

        return await self.retry.run(once, idempotent=idempotent)

    async def _once(self, method: str, path: str, *, auth: Auth | None, params: Mapping[str, Any] | None,
                    json: Any, envelope: bool) -> Any:
        headers = auth.headers() if auth is not None else {}
        secrets = [headers.get("X-API-Key", "")]
        clean_params = {k: ("true" if v is True else "false" if v is False else v) for k, v in (params or {}).items() if v is not None}
        response = await send(self._http, method, self.base_url + path, backend=self.backend_name, not_sent=OVNotSent,
                              failed=OVTransportError, params=clean_params, json=json, headers=headers)
        return self._decode(response, method, path, secrets, envelope)

    def _decode(self, response: httpx.Response, method: str, path: str, secrets: Sequence[str], envelope: bool) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("status") == "error" or response.status_code >= 400:
            err = (body or {}).get("error") if isinstance(body, dict) else None
            code = err.get("code") if isinstance(err, dict) else None
            message = err.get("message") if isinstance(err, dict) else None
            details = err.get("details") if isinstance(err, dict) and isinstance(err.get("details"), dict) else {}
            if message is None:
                message = (response.text or "")[:200] or response.reason_phrase
            cls = error_for(code, response.status_code)
            text = redact(f"{method} {path}: {message}", secrets)
            safe_details = {k: redact(str(v), secrets)[:300] for k, v in details.items()}
            kwargs: dict[str, Any] = dict(code=code or None, http_status=response.status_code, details=safe_details,
                                          backend=self.backend_name)
            if cls is OVRateLimited:
                kwargs["retry_after"] = parse_retry_after(response.headers.get("Retry-After"))
            raise cls(text, **kwargs)
        if not envelope:
            return body
        if not isinstance(body, dict) or body.get("status") != "ok" or "result" not in body:
            raise OVProtocolError(f"{method} {path}: HTTP {response.status_code} without an OpenViking envelope",
                                  http_status=response.status_code, backend=self.backend_name)
        return body["result"]

    # -- health ------------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        return await self.request("GET", "/health", auth=None, envelope=False)

    async def ready(self) -> bool:
        try:
            await self.request("GET", "/ready", auth=None, envelope=False)
        except OpenVikingError:
            return False
        return True

    # -- content and filesystem --------------------------------------------------------------
    async def write(self, auth: Auth, uri: str, content: str, *, mode: str = "replace", wait: bool = True,
                    tags: Sequence[str] | None = None, processing_mode: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"uri": uri, "content": content, "mode": mode, "wait": wait}
        if tags is not None:
            body["tags"] = list(tags)
        if processing_mode is not None:
            body["processing_mode"] = processing_mode
        return await self.request("POST", f"{_API}/content/write", auth=auth, json=body, idempotent=(mode == "replace"))

    async def read(self, auth: Auth, uri: str) -> str:
        result = await self.request("GET", f"{_API}/content/read", auth=auth, params={"uri": uri})
        if not isinstance(result, str):
            raise OVProtocolError(f"content/read returned {type(result).__name__}, expected text", backend=self.backend_name)
        return result

    async def delete(self, auth: Auth, uri: str, *, recursive: bool = False, wait: bool = True) -> dict[str, Any]:
        return await self.request("DELETE", f"{_API}/fs", auth=auth, params={"uri": uri, "recursive": recursive, "wait": wait})

    async def ls(self, auth: Auth, uri: str, *, recursive: bool = False, limit: int | None = None) -> list[dict[str, Any]]:
        result = await self.request("GET", f"{_API}/fs/ls", auth=auth,
                                    params={"uri": uri, "recursive": recursive, "limit": limit})
        return list(result or [])

    async def ls_page(self, auth: Auth, uri: str, *, offset: int, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """One window of a directory sorted by name: (entries, has_more). 0.5.2 lists at most
        `node_limit` (default 1000) entries per call, so large directories are walked with this."""
        body = await self.request("GET", f"{_API}/fs/ls", auth=auth, envelope=False,
                                  params={"uri": uri, "offset": offset, "limit": limit, "sort_by": "name", "sort_order": "asc"})
        if not isinstance(body, dict) or body.get("status") != "ok" or not isinstance(body.get("result"), list):
            raise OVProtocolError(f"fs/ls of {uri} answered without a listing", backend=self.backend_name)
        return [e for e in body["result"] if isinstance(e, dict)], bool(body.get("has_more"))

    async def stat(self, auth: Auth, uri: str) -> dict[str, Any]:
        return await self.request("GET", f"{_API}/fs/stat", auth=auth, params={"uri": uri})

    # -- retrieval -------------------------------------------------------------------------
    async def find(self, auth: Auth, query: str, *, target_uri: str | Sequence[str], limit: int = 10,
                   level: int | None = 2, read_content: bool = False, score_threshold: float | None = None,
                   tags: Sequence[str] | None = None, filter: Mapping[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, "target_uri": target_uri if isinstance(target_uri, str) else list(target_uri),
                                "limit": limit, "read_content": read_content}
        for name, value in (("level", level), ("score_threshold", score_threshold), ("tags", tags), ("filter", filter)):
            if value is not None:
                body[name] = list(value) if name == "tags" else dict(value) if name == "filter" else value
        return await self.request("POST", f"{_API}/search/find", auth=auth, json=body)

    async def search(self, auth: Auth, query: str, *, mode: str = "list", limit: int = 10,
                     target_uri: str | Sequence[str] | None = None, peer_scope: str | None = None,
                     session_id: str | None = None, level: int | None = None, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, "mode": mode, "limit": limit, **extra}
        if target_uri is not None:
            body["target_uri"] = target_uri if isinstance(target_uri, str) else list(target_uri)
        if peer_scope is not None:
            body["peer_scope"] = peer_scope
        if session_id is not None:
            body["session_id"] = session_id
        if level is not None:
            body["level"] = level
        return await self.request("POST", f"{_API}/search/search", auth=auth, json=body)

    # -- sessions and tasks -----------------------------------------------------------------
    async def add_message(self, auth: Auth, session_id: str, role: str, content: str, *,
                          peer_id: str | None = None, created_at: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": content}
        if peer_id is not None:
            body["peer_id"] = peer_id
        if created_at is not None:
            body["created_at"] = created_at
        return await self.request("POST", f"{_API}/sessions/{session_id}/messages", auth=auth, json=body, idempotent=False)

    async def commit(self, auth: Auth, session_id: str) -> dict[str, Any]:
        return await self.request("POST", f"{_API}/sessions/{session_id}/commit", auth=auth, json={}, idempotent=False)

    async def task(self, auth: Auth, task_id: str) -> dict[str, Any]:
        return await self.request("GET", f"{_API}/tasks/{task_id}", auth=auth)

    async def wait_task(self, auth: Auth, task_id: str, *, deadline: float = 60.0, poll: float = 0.25) -> dict[str, Any]:
        """Poll a background task until it leaves pending/running, or raise `TaskTimeout`."""
        end = time.monotonic() + deadline
        while True:
            task = await self.task(auth, task_id)
            if task.get("status") not in ("pending", "running", "accepted", "queued"):
                return task
            if time.monotonic() >= end:
                raise TaskTimeout(f"task {task_id} still {task.get('status')!r} after {deadline:.0f}s", backend=self.backend_name)
            await asyncio.sleep(poll)

    async def wait_processed(self, auth: Auth, timeout: float | None = None) -> Any:
        body = {"timeout": timeout} if timeout is not None else {}
        return await self.request("POST", f"{_API}/system/wait", auth=auth, json=body)

    # -- administration (root key) ---------------------------------------------------------------
    async def create_account(self, root: Auth, account_id: str, admin_user_id: str) -> dict[str, Any]:
        return await self.request("POST", f"{_API}/admin/accounts", auth=root,
                                  json={"account_id": account_id, "admin_user_id": admin_user_id}, idempotent=False)

    async def delete_account(self, root: Auth, account_id: str) -> Any:
        return await self.request("DELETE", f"{_API}/admin/accounts/{account_id}", auth=root)

    async def list_accounts(self, root: Auth) -> list[dict[str, Any]]:
        return list(await self.request("GET", f"{_API}/admin/accounts", auth=root) or [])

    async def create_user(self, root: Auth, account_id: str, user_id: str, role: str = "user") -> dict[str, Any]:
        return await self.request("POST", f"{_API}/admin/accounts/{account_id}/users", auth=root,
                                  json={"user_id": user_id, "role": role}, idempotent=False)

    async def list_users(self, root: Auth, account_id: str) -> list[dict[str, Any]]:
        return list(await self.request("GET", f"{_API}/admin/accounts/{account_id}/users", auth=root) or [])

    async def delete_user(self, root: Auth, account_id: str, user_id: str) -> Any:
        return await self.request("DELETE", f"{_API}/admin/accounts/{account_id}/users/{user_id}", auth=root)

    async def regenerate_key(self, root: Auth, account_id: str, user_id: str) -> dict[str, Any]:
        return await self.request("POST", f"{_API}/admin/accounts/{account_id}/users/{user_id}/key", auth=root,
                                  json=None, idempotent=False)
