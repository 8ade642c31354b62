"""The one HTTP dialect every remote adapter speaks: retries, redaction, error mapping, clients.

Each remote adapter (Viking Memory, OpenViking) only frames its own envelope and error codes;
everything else about talking HTTP is here, once:

- `RetryPolicy`: bounded exponential backoff with jitter (tenacity), honouring `Retry-After`,
  retrying only what the error tree calls transient (`BackendUnavailable`, unless the error says a retry
  inside the same call cannot help: `retry_in_call = False`). A call that is not idempotent is
  retried only when the server certainly did not apply it (`NotSent`, `BackendRateLimited`, `RetryLater`).
- `redact(text, secrets)`: the one redaction, with the one redaction text `REDACTED`.
- `send(...)`: the one place a request goes out; transport failures become the tree
  (`NotSent` when nothing left the machine, `BackendUnavailable` for timeouts and resets).
- `status_category(status)`: the category of an HTTP status when the body names no code.
- `http_client_for(http_client=, transport=, ...)`: the constructor convention: pass an
  `httpx.AsyncClient` (pooled, owned by the caller) or an httpx transport (for instance
  `httpx.MockTransport(simulator.handler)`), otherwise a pooled client is made. Clients made
  here never read proxies or `.netrc` credentials from the environment (`trust_env=False`).

It must never log, repr or raise a secret, and never decides who may see what.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from adapters.errors import BackendError, BackendMisconfigured, BackendConflict, InvalidRequest, BackendNotFound, NotSent, PermissionDenied, BackendRateLimited, RetryLater, BackendUnavailable

__all__ = [
    "REDACTED",
    "redact",
    "RetryPolicy",
    "NO_RETRY",
    "equal_jitter",
    "certainly_not_applied",
    "transient",
    "parse_retry_after",
    "status_category",
    "send",
    "http_client_for",
]

log = logging.getLogger("adapters.shared.http")
T = TypeVar("T")

#: The one text a secret is replaced with, in messages, reprs and logs of every adapter.
REDACTED = "<redacted>"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of every (non-empty) secret replaced by `REDACTED`."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):  # longest first: no partial leftovers
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def equal_jitter(rng: random.Random | None = None) -> Callable[[float], float]:
    """A wait uniformly drawn from [ceiling/2, ceiling] ("equal jitter")."""
    source = rng or random.Random()

    def jitter(ceiling: float) -> float:
        return ceiling / 2 + source.uniform(0, ceiling / 2)

    return jitter


def transient(exc: BaseException) -> bool:
    """The default "which errors retry": transient failures of the tree that say a retry within
    the same call can help."""
    return isinstance(exc, BackendUnavailable) and getattr(exc, "retry_in_call", True)


def certainly_not_applied(exc: BaseException) -> bool:
    """True when the server cannot have acted on the request: safe to repeat any write."""
    return isinstance(exc, (NotSent, BackendRateLimited, RetryLater))


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter, shared by every remote adapter.

    Defaults follow the official Viking Go client: 4 attempts (3 retries) from 100 ms, capped at
    10 s, equal jitter. A `Retry-After` is waited for (at least) when `honour_retry_after`; one
    longer than `max_retry_after` is not waited for: the error is raised at once. `retry_on`
    decides which errors retry (default `transient`). `sleep` is injectable so tests never wait.
    """

    attempts: int = 4
    backoff_base: float = 0.1
    backoff_cap: float = 10.0
    jitter: Callable[[float], float] = field(default_factory=equal_jitter)
    honour_retry_after: bool = True
    max_retry_after: float = 60.0
    retry_on: Callable[[BaseException], bool] = transient
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def backoff(self, attempt: int) -> float:
        """Wait before retry number `attempt` (1-based), jittered, never above `backoff_cap`."""
        ceiling = min(self.backoff_cap, self.backoff_base * (2 ** (attempt - 1)))
        return min(self.backoff_cap, max(0.0, self.jitter(ceiling)))

    def wait_for(self, attempt: int, error: BaseException | None) -> float:
        wait = self.backoff(attempt)
        retry_after = getattr(error, "retry_after", None)
        if self.honour_retry_after and retry_after is not None:
            wait = max(wait, float(retry_after))
        return wait

    def should_retry(self, exc: BaseException, *, idempotent: bool = True) -> bool:
        if not self.retry_on(exc):
            return False
        if not idempotent and not certainly_not_applied(exc):
            return False
        retry_after = getattr(exc, "retry_after", None)
        return retry_after is None or not self.honour_retry_after or retry_after <= self.max_retry_after

    async def run(self, call: Callable[[], Awaitable[T]], *, idempotent: bool = True) -> T:
        """`await call()` with retries; the last error is raised as it is (typed, redacted)."""

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return self.wait_for(state.attempt_number, exc)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            wait=wait,
            retry=retry_if_exception(lambda exc: self.should_retry(exc, idempotent=idempotent)),
            sleep=self.sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await call()
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True always raises


NO_RETRY = RetryPolicy(attempts=1)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds or an HTTP date), None if absent/bad."""
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


_BY_STATUS: dict[int, type[BackendError]] = {
    400: InvalidRequest,
    401: PermissionDenied,
    403: PermissionDenied,
    404: BackendNotFound,
    409: BackendConflict,
    422: InvalidRequest,
    429: BackendRateLimited,
}


def status_category(status: int) -> type[BackendError] | None:
    """The tree's category for a failed HTTP status (None for a success)."""
    if status < 400:
        return None
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return BackendUnavailable
    return InvalidRequest


async def send(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    backend: str,
    not_sent: type[NotSent] = NotSent,
    failed: type[BackendUnavailable] = BackendUnavailable,
    **kwargs: Any,
) -> httpx.Response:
    """One request. Transport failures become `not_sent` (nothing left: connect refused, pool
    timeout) or `failed` (timeouts, resets: the server may have acted). Messages name the error
    type and the path, never a header, a body or a credential."""
    path = httpx.URL(url).path if "://" in url else url
    try:
        return await http.request(method, url, **kwargs)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        log.warning("%s %s %s: connection failed (%s)", backend, method, path, type(exc).__name__)
        raise not_sent(f"{method} {path}: connection failed ({type(exc).__name__})", backend=backend) from None
    except httpx.TimeoutException as exc:
        log.warning("%s %s %s: timed out (%s)", backend, method, path, type(exc).__name__)
        raise failed(f"{method} {path} timed out ({type(exc).__name__})", backend=backend) from None
    except httpx.TransportError as exc:
        log.warning("%s %s %s: transport error (%s)", backend, method, path, type(exc).__name__)
        raise failed(f"{method} {path} transport error ({type(exc).__name__})", backend=backend) from None


def http_client_for(
    *,
    http_client: httpx.AsyncClient | None,
    transport: httpx.AsyncBaseTransport | None,
    timeout: httpx.Timeout | float,
    max_connections: int = 20,
    base_url: str = "",
) -> tuple[httpx.AsyncClient, bool]:
    """(client, owned): the caller's client as it is, or a new pooled one (owned: close it)."""
    if http_client is not None and transport is not None:
        raise BackendMisconfigured("pass http_client or transport, not both")
    if http_client is not None:
        return http_client, False
    client = httpx.AsyncClient(
        base_url=base_url,
        transport=transport,
        timeout=timeout,
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        trust_env=False,
    )
    return client, True
