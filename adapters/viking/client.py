"""A thin async client for hosted Viking Memory: envelopes, typed errors, auth, retries.

It speaks the service's wire format and nothing else — it knows no ScopeKey and never decides
who may see what (that is `adapters.viking.backend` + the bridge). It must never log, repr or
raise a secret: messages are redacted (`adapters.shared.http.redact`) of every secret the auth holds.

Transport, retries and redaction are the shared HTTP layer (`adapters.shared.http`): pass an
`httpx.AsyncClient` (`http_client=`, pooled, owned by the caller) or an httpx transport (e.g.
`httpx.MockTransport(simulator.handler)`). Bodies are serialised once and sent as `content=`
bytes, so SignerV4 hashes exactly what is sent.

Retries (`adapters.shared.http.RetryPolicy`): 429, HTTP 5xx, 1000025, 1000028, 1000029 and network
errors; 1000023 (index initialising) is surfaced as `RetryLater` at once (it takes minutes). A
write that is not idempotent (`event/add`, `profile/add`) is retried only when the server
certainly did not apply it (rate limited, connection never established); its caller owns the
rest (see backend.put and `adapters.viking.ledger`).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal, Mapping, Sequence

import httpx

from adapters.errors import InvalidRequest
from adapters.shared.http import RetryPolicy, http_client_for, parse_retry_after, redact, send
from adapters.viking.auth import ApiKeyAuth, SignerV4Auth, VikingAuth
from adapters.viking.errors import VikingNotSent, VikingUnavailable, error_for

__all__ = ["RetryPolicy", "VikingMemoryClient", "DEFAULT_TIMEOUT", "SearchKind"]

log = logging.getLogger("adapters.viking")

DEFAULT_TIMEOUT = httpx.Timeout(15.0, connect=5.0)
SearchKind = Literal["unified", "event", "profile"]
_SEARCH_PATHS = {"unified": "/api/memory/search", "event": "/api/memory/event/search", "profile": "/api/memory/profile/search"}


def _code_of(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw.strip())
    return None


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
            raise InvalidRequest("auth must be ApiKeyAuth or SignerV4Auth", backend="viking")
        self.base_url = base_url.rstrip("/")
        self.project_name = project_name
        self._auth = auth
        self._secrets = tuple(s for s in auth.secrets() if s)
        self.retry = retry or RetryPolicy()
        self._http, self._owns_http = http_client_for(http_client=http_client, transport=transport, timeout=timeout, max_connections=max_connections)

    def __repr__(self) -> str:
        return f"VikingMemoryClient(base_url={self.base_url!r}, project={self.project_name!r}, auth={self._auth!r})"

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    # -- plumbing -----------------------------------------------------------------------
    def scrub(self, text: str) -> str:
        """`text` without any secret of this client's auth (`adapters.shared.http.redact`)."""
        return redact(text, self._secrets)

    async def _send_once(self, method: str, path: str, body: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
        content = b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        response = await send(
            self._http, method, self.base_url + path, backend="viking", not_sent=VikingNotSent, failed=VikingUnavailable,
            content=content, headers=headers, auth=self._auth,
        )
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
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
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
        """One call with retries (`self.retry`). Non-idempotent calls retry only when nothing was applied."""

        async def once() -> dict[str, Any]:
            data, _ = await self._send_once(method, path, body)
            return data

        return await self.retry.run(once, idempotent=idempotent)

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
            raise InvalidRequest("batch_delete needs user_id or assistant_id in its filter; it never deletes 'all'", backend="viking")
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
            raise InvalidRequest("a Viking search needs user_id or assistant_id; it never searches 'all'", backend="viking")
        if not 1 <= limit <= 5000:
            raise InvalidRequest("limit must be within 1..5000", backend="viking")
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
