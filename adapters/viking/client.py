"""A thin async client for hosted Viking Memory: envelopes, typed errors, auth, retries.

It speaks the service's wire format and nothing else — it knows no ScopeKey and never decides
who may see what (that is `adapters.viking.backend` + the bridge). It must never log, repr or
raise a secret: messages are scrubbed of every secret the auth object holds.

Transport: pass an `httpx.AsyncClient` (pooled, owned by the caller) or an `httpx` transport
(e.g. `httpx.MockTransport(simulator.handler)`); otherwise a pooled client with timeouts is made.
Bodies are serialised once and sent as `content=` bytes, so SignerV4 hashes exactly what is sent.

Retries (tenacity): 429, HTTP 5xx, 1000025, 1000028, 1000029 and network errors, exponential
backoff with jitter from `initial_wait`, capped at `max_wait`, at least `Retry-After` when the
server sends one; 1000023 (index initialising) is surfaced as `RetryLater` at once. A write that
is not idempotent (`event/add`, `profile/add`) is retried only when the server certainly did not
apply it (rate limited, connection never established); its caller owns the rest (see backend.put).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Mapping, Sequence

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from adapters.viking.auth import ApiKeyAuth, SignerV4Auth, VikingAuth
from adapters.viking.errors import VikingError, VikingRateLimited, VikingUnavailable, error_for

__all__ = ["RetryPolicy", "VikingMemoryClient", "DEFAULT_TIMEOUT", "SearchKind"]

log = logging.getLogger("adapters.viking")

DEFAULT_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
SearchKind = Literal["unified", "event", "profile"]
_SEARCH_PATHS = {"unified": "/api/memory/search", "event": "/api/memory/event/search", "profile": "/api/memory/profile/search"}


def _equal_jitter(rng: random.Random) -> Callable[[float], float]:
    def jitter(ceiling: float) -> float:
        return ceiling / 2 + rng.uniform(0, ceiling / 2)

    return jitter


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter. `sleep` is injectable so tests never really wait.

    Defaults follow the official Go client: 3 retries (4 attempts) from 100 ms, capped at 10 s.
    A `Retry-After` longer than `max_retry_after` is not waited for: the error is raised instead.
    """

    max_attempts: int = 4
    initial_wait: float = 0.1
    max_wait: float = 10.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    jitter: Callable[[float], float] = field(default_factory=lambda: _equal_jitter(random.Random()))

    def backoff(self, attempt: int) -> float:
        """Wait before retry number `attempt` (1-based), jittered, never above `max_wait`."""
        ceiling = min(self.max_wait, self.initial_wait * (2 ** (attempt - 1)))
        return min(self.max_wait, max(0.0, self.jitter(ceiling)))

    def wait_for(self, attempt: int, error: BaseException | None) -> float:
        wait = self.backoff(attempt)
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            wait = max(wait, float(retry_after))
        return wait


NO_RETRY = RetryPolicy(max_attempts=1)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _code_of(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw.strip())
    return None


class _NotSent(VikingUnavailable):
    """The request never reached the server (connect failure): safe to retry any write."""


class VikingMemoryClient:
    """Async client for the Viking Memory data plane and collection API.

    `VikingMemoryClient(base_url, auth, project_name="default", http_client=None, transport=None,
    timeout=DEFAULT_TIMEOUT, retry=RetryPolicy())`
    """

    def __init__(
        self,
        base_url: str,
        auth: VikingAuth,
        *,
        project_name: str = "default",
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        max_connections: int = 20,
    ) -> None:
        if not isinstance(auth, (ApiKeyAuth, SignerV4Auth)):
            raise TypeError("auth must be ApiKeyAuth or SignerV4Auth")
        if http_client is not None and transport is not None:
            raise ValueError("pass http_client or transport, not both")
        self.base_url = base_url.rstrip("/")
        self.project_name = project_name
        self._auth = auth
        self._secrets = tuple(s for s in auth.secrets() if s)
        self.retry = retry or RetryPolicy()
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            transport=transport,
            timeout=timeout,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    def __repr__(self) -> str:
        return f"VikingMemoryClient(base_url={self.base_url!r}, project={self.project_name!r}, auth={self._auth!r})"

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    # -- plumbing -----------------------------------------------------------------------
    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "<redacted>")
        return text

    async def _send_once(self, method: str, path: str, body: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
        content = b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        try:
            response = await self._http.request(method, self.base_url + path, content=content, headers=headers, auth=self._auth)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            log.warning("viking %s %s: connection failed (%s)", method, path, type(exc).__name__)
            raise _NotSent(f"connection failed: {type(exc).__name__}", backend="viking") from None
        except httpx.TimeoutException as exc:
            log.warning("viking %s %s: timed out (%s)", method, path, type(exc).__name__)
            raise VikingUnavailable(f"{path} timed out ({type(exc).__name__})", backend="viking") from None
        except httpx.TransportError as exc:
            log.warning("viking %s %s: transport error (%s)", method, path, type(exc).__name__)
            raise VikingUnavailable(f"{path} transport error ({type(exc).__name__})", backend="viking") from None
        return self._unwrap(path, response)

    def _unwrap(self, path: str, response: httpx.Response) -> tuple[dict[str, Any], bool]:
        status = response.status_code
        try:
            payload = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            payload = None
        code: int | None = None
        message = ""
        request_id: str | None = None
        data: Any = None
        pascal = False
        not_envelope = False
        if isinstance(payload, dict) and isinstance(payload.get("ResponseMetadata"), dict):
            pascal = True
            meta = payload["ResponseMetadata"]
            request_id = meta.get("RequestId")
            err = meta.get("Error")
            if isinstance(err, dict) and (err.get("Code") or err.get("CodeN")):
                code = _code_of(err.get("CodeN")) or _code_of(err.get("Code"))
                message = str(err.get("Message") or err.get("Code") or "error")
                if code is None:
                    code = -1
            data = payload.get("Result")
        elif isinstance(payload, dict) and "code" in payload:
            code = _code_of(payload.get("code"))
            message = str(payload.get("message") or "")
            request_id = payload.get("request_id")
            data = payload.get("data")
            if code == 0:
                code = None
            elif code is None:
                code = -1
        elif status < 400:
            code, message, not_envelope = -1, "response is not a Viking envelope", True
        log.debug("viking POST %s -> http=%s code=%s request_id=%s", path, status, code, request_id)
        if code is not None or status >= 400:
            err = error_for(
                code=code if code != -1 else None,
                http_status=status,
                message=self.scrub(message or response.reason_phrase or "error"),
                request_id=request_id,
                retry_after=_parse_retry_after(response.headers.get("Retry-After")),
            )
            if not_envelope:
                err = VikingUnavailable(self.scrub(message), backend="viking")
            raise err
        if data is None:
            data = {}
        if not isinstance(data, dict):
            data = {"value": data}
        return data, pascal

    async def request(self, method: str, path: str, body: Mapping[str, Any] | None = None, *, idempotent: bool = True) -> dict[str, Any]:
        """One call with retries. Non-idempotent calls retry only when nothing was applied."""
        policy = self.retry

        def should_retry(exc: BaseException) -> bool:
            if isinstance(exc, _NotSent) or isinstance(exc, VikingRateLimited):
                return _retry_after_ok(exc)
            if not idempotent:
                return False
            return isinstance(exc, VikingUnavailable) and _retry_after_ok(exc)

        def _retry_after_ok(exc: BaseException) -> bool:
            ra = getattr(exc, "retry_after", None)
            return ra is None or ra <= policy.max_retry_after

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return policy.wait_for(state.attempt_number, exc)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(max(1, policy.max_attempts)),
            wait=wait,
            retry=retry_if_exception(should_retry),
            sleep=policy.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                data, _ = await self._send_once(method, path, body)
        return data

    def _body(self, collection: str, extra: Mapping[str, Any]) -> dict[str, Any]:
        body = {"collection_name": collection, "project_name": self.project_name}
        body.update({k: v for k, v in extra.items() if v is not None})
        return body

    # -- data plane ---------------------------------------------------------------------
    async def ping(self) -> dict[str, Any]:
        return await self.request("GET", "/api/memory/ping", None)

    async def session_add(
        self, collection: str, session_id: str, messages: Sequence[Mapping[str, Any]], metadata: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Add a conversation; the server extracts events/profiles. Reusing an id OVERWRITES it,
        so a retry of the same call is idempotent."""
        return await self.request(
            "POST", "/api/memory/session/add", self._body(collection, {"session_id": session_id, "messages": list(messages), "metadata": dict(metadata)})
        )

    async def event_add(
        self,
        collection: str,
        *,
        event_type: str,
        memory_info: Mapping[str, Any],
        user_id: str | None = None,
        assistant_id: str | None = None,
        group_id: str | None = None,
        time_ms: int | None = None,
    ) -> str:
        data = await self.request(
            "POST",
            "/api/memory/event/add",
            self._body(
                collection,
                {"event_type": event_type, "memory_info": dict(memory_info), "user_id": user_id, "assistant_id": assistant_id, "group_id": group_id, "time": time_ms},
            ),
            idempotent=False,
        )
        event_id = data.get("event_id")
        if not isinstance(event_id, str) or not event_id:
            raise VikingUnavailable("event/add answered without an event_id", backend="viking")
        return event_id

    async def event_update(self, collection: str, event_id: str, memory_info: Mapping[str, Any]) -> dict[str, Any]:
        return await self.request("POST", "/api/memory/event/update", self._body(collection, {"event_id": event_id, "memory_info": dict(memory_info)}))

    async def event_delete(self, collection: str, event_id: str) -> dict[str, Any]:
        return await self.request("POST", "/api/memory/event/delete", self._body(collection, {"event_id": event_id}))

    async def event_batch_delete(self, collection: str, filter: Mapping[str, Any]) -> dict[str, Any]:
        if not (filter.get("user_id") or filter.get("assistant_id")):
            raise ValueError("batch_delete needs user_id or assistant_id in its filter; it never deletes 'all'")
        return await self.request("POST", "/api/memory/event/batch_delete", self._body(collection, {"filter": dict(filter), "delete_type": "full"}))

    async def profile_add(
        self,
        collection: str,
        *,
        profile_type: str,
        memory_info: Mapping[str, Any],
        user_id: str | None = None,
        assistant_id: str | None = None,
        group_id: str | None = None,
        is_upsert: bool = True,
    ) -> str:
        data = await self.request(
            "POST",
            "/api/memory/profile/add",
            self._body(
                collection,
                {"profile_type": profile_type, "memory_info": dict(memory_info), "user_id": user_id, "assistant_id": assistant_id, "group_id": group_id, "is_upsert": is_upsert},
            ),
            idempotent=is_upsert,
        )
        return str(data.get("profile_id", ""))

    async def profile_delete(self, collection: str, profile_id: str) -> dict[str, Any]:
        return await self.request("POST", "/api/memory/profile/delete", self._body(collection, {"profile_id": profile_id}))

    async def search(
        self,
        collection: str,
        *,
        filter: Mapping[str, Any],
        query: str | None = None,
        limit: int = 10,
        kind: SearchKind = "unified",
        time_decay_config: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """`result_list` of a search. Without `query` it lists filter matches, newest first."""
        if not (filter.get("user_id") or filter.get("assistant_id")):
            raise ValueError("a Viking search needs user_id or assistant_id; it never searches 'all'")
        if not 1 <= limit <= 5000:
            raise ValueError("limit must be within 1..5000")
        data = await self.request(
            "POST",
            _SEARCH_PATHS[kind],
            self._body(collection, {"filter": dict(filter), "query": query or None, "limit": limit, "time_decay_config": time_decay_config}),
        )
        items = data.get("result_list") or []
        if not isinstance(items, list):
            raise VikingUnavailable("search answered with a malformed result_list", backend="viking")
        return [item for item in items if isinstance(item, dict)]

    async def get_context(self, collection: str, *, filter: Mapping[str, Any], query: str | None = None, limit: int = 10) -> dict[str, Any]:
        return await self.request("POST", "/api/memory/get_context", self._body(collection, {"filter": dict(filter), "query": query, "limit": limit}))

    # -- collections (PascalCase, {ResponseMetadata, Result}; AK/SK only) --------------------
    async def collection_create(
        self, name: str, *, description: str = "", custom_event_types: Sequence[Mapping[str, Any]] = (), builtin_event_types: Sequence[str] = ("sys_event_v1",)
    ) -> dict[str, Any]:
        body = {
            "CollectionName": name,
            "ProjectName": self.project_name,
            "Description": description,
            "BuiltinEventTypes": list(builtin_event_types),
            "CustomEventTypeSchemas": list(custom_event_types),
        }
        return await self.request("POST", "/api/memory/collection/create", body)

    async def collection_info(self, name: str) -> dict[str, Any]:
        return await self.request("POST", "/api/memory/collection/info", {"CollectionName": name, "ProjectName": self.project_name})

    async def collection_delete(self, name: str) -> dict[str, Any]:
        return await self.request("POST", "/api/memory/collection/delete", {"CollectionName": name, "ProjectName": self.project_name})


def is_viking_error(exc: BaseException) -> bool:
    return isinstance(exc, VikingError)
