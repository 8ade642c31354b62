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
Retries (tenacity): 429, 503/5xx and transport errors, exponential backoff with jitter, at most
`RetryPolicy.attempts` tries; calls that are not idempotent are retried only when the server
cannot have acted (connect errors, 429, 503). The wait strategy is injectable for tests.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import httpx
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from adapters.openviking.errors import (
    OpenVikingError,
    OVNotReady,
    OVProtocolError,
    OVRateLimited,
    OVServerError,
    OVTransportError,
    error_for,
)

__all__ = ["SecretKey", "Auth", "RetryPolicy", "OpenVikingClient", "TaskTimeout"]

_API = "/api/v1"


class SecretKey:
    """An API key that will not print itself. `reveal()` is the only way to read it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError("an API key must be a non-empty string")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretKey('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("SecretKey", self._value))

    def __reduce__(self) -> Any:  # never pickle a key by accident
        raise TypeError("SecretKey cannot be pickled")


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


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    initial: float = 0.2
    max_wait: float = 5.0
    jitter: float = 0.2
    wait: Callable[[Any], float] | None = None  # a tenacity wait strategy; tests inject wait_none()

    def strategy(self) -> Callable[[Any], float]:
        return self.wait or wait_exponential_jitter(multiplier=self.initial, max=self.max_wait, jitter=self.jitter)


class TaskTimeout(OVServerError):
    """A background task did not finish before its deadline."""

    code = "DEADLINE_EXCEEDED"


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "**********")
    return text


class OpenVikingClient:
    """Async client. Share one per server: the httpx pool is reused across principals."""

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float = httpx.Timeout(30.0, connect=5.0),
        limits: httpx.Limits = httpx.Limits(max_connections=32, max_keepalive_connections=16),
        retry: RetryPolicy = RetryPolicy(),
        backend_name: str = "openviking",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry
        self.backend_name = backend_name
        self._owns_http = http is None
        # trust_env=False: never pick up proxies or netrc credentials from the environment.
        self._http = http or httpx.AsyncClient(base_url=self.base_url, transport=transport, timeout=timeout,
                                               limits=limits, trust_env=False)

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
        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, (OVRateLimited, OVNotReady)):
                return True
            if isinstance(exc, OVTransportError):
                return idempotent or bool(exc.details.get("before_send"))
            return idempotent and isinstance(exc, (OVServerError, OVProtocolError))

        retrying = AsyncRetrying(
            stop=stop_after_attempt(max(1, self.retry.attempts)),
            wait=self.retry.strategy(),
            retry=retry_if_exception(retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._once(method, path, auth=auth, params=params, json=json, envelope=envelope)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _once(self, method: str, path: str, *, auth: Auth | None, params: Mapping[str, Any] | None,
                    json: Any, envelope: bool) -> Any:
        headers = auth.headers() if auth is not None else {}
        secrets = [headers.get("X-API-Key", "")]
        clean_params = {k: ("true" if v is True else "false" if v is False else v) for k, v in (params or {}).items() if v is not None}
        try:
            response = await self._http.request(method, path, params=clean_params, json=json, headers=headers)
        except httpx.ConnectError as exc:
            raise OVTransportError(f"cannot connect to {self.base_url}: {type(exc).__name__}",
                                   details={"before_send": True}, backend=self.backend_name) from None
        except httpx.TimeoutException as exc:
            raise OVTransportError(f"{method} {path} timed out ({type(exc).__name__})", backend=self.backend_name) from None
        except httpx.TransportError as exc:
            raise OVTransportError(f"{method} {path} failed: {type(exc).__name__}", backend=self.backend_name) from None
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
            text = _scrub(f"{method} {path}: {message}", secrets)
            safe_details = {k: _scrub(str(v), secrets)[:300] for k, v in details.items()}
            kwargs: dict[str, Any] = dict(code=code or None, http_status=response.status_code, details=safe_details,
                                          backend=self.backend_name)
            if cls is OVRateLimited:
                retry_after = response.headers.get("Retry-After")
                try:
                    kwargs["retry_after"] = float(retry_after) if retry_after else None
                except ValueError:
                    kwargs["retry_after"] = None
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
