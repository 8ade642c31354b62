"""The one HTTP dialect (adapters/shared/http.py) both remote adapters use: one RetryPolicy, one
redaction, one transport-error mapping, one constructor convention."""

from __future__ import annotations

import httpx
import pytest

from adapters.errors import InvalidRequest, NotSent, BackendRateLimited, RetryLater, BackendUnavailable
from adapters.shared.http import REDACTED, RetryPolicy, http_client_for, redact, send
from adapters.openviking.client import OpenVikingClient
from adapters.openviking.client import RetryPolicy as OpenVikingRetryPolicy
from adapters.viking import RetryPolicy as VikingRetryPolicy
from adapters.viking.errors import VikingRetryLater
from tests.viking.vikingkit import Waits


def test_both_adapters_use_the_one_retry_policy() -> None:
    assert VikingRetryPolicy is RetryPolicy and OpenVikingRetryPolicy is RetryPolicy


@pytest.mark.parametrize(
    ("error", "idempotent", "retried"),
    [
        (BackendUnavailable("5xx"), True, True),
        (BackendUnavailable("5xx after the server may have acted"), False, False),
        (NotSent("connect refused"), False, True),
        (BackendRateLimited("slow down"), False, True),
        (RetryLater("503 not ready"), False, True),
        (VikingRetryLater("index initialising for minutes"), True, False),
        (InvalidRequest("bad"), True, False),
        (BackendRateLimited("wait an hour", retry_after=3600), True, False),
    ],
)
async def test_which_errors_retry(error: Exception, idempotent: bool, retried: bool) -> None:
    waits = Waits()
    policy = RetryPolicy(attempts=3, sleep=waits, jitter=lambda c: c)
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise error
        return "ok"

    if retried:
        assert await policy.run(call, idempotent=idempotent) == "ok" and calls == 2
    else:
        with pytest.raises(type(error)):
            await policy.run(call, idempotent=idempotent)
        assert calls == 1 and waits.calls == []


async def test_retry_after_is_honoured_as_a_floor() -> None:
    waits = Waits()
    policy = RetryPolicy(attempts=2, backoff_base=0.1, sleep=waits, jitter=lambda c: c)
    seen: list[int] = []

    async def call() -> str:
        seen.append(1)
        if len(seen) == 1:
            raise BackendRateLimited("busy", retry_after=7.0)
        return "ok"

    assert await policy.run(call) == "ok" and waits.calls == [7.0]


def test_one_redaction_text() -> None:
    assert redact("key sk-abc and sk-abcdef", ["sk-abc", "sk-abcdef", None, ""]) == f"key {REDACTED} and {REDACTED}"


async def test_transport_failures_map_into_the_tree_without_the_request() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"refused {request.headers['authorization']}", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as c:
        with pytest.raises(NotSent) as info:
            await send(c, "POST", "https://x.test/a", backend="t", headers={"authorization": "Bearer sk-1"})
        assert "sk-1" not in str(info.value) and info.value.__cause__ is None
    async with httpx.AsyncClient(transport=httpx.MockTransport(slow)) as c:
        with pytest.raises(BackendUnavailable) as timed_out:
            await send(c, "POST", "https://x.test/a", backend="t")
        assert not isinstance(timed_out.value, NotSent)  # the server may have acted


async def test_one_constructor_convention_and_no_environment_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:1")
    made, owned = http_client_for(http_client=None, transport=None, timeout=1.0)
    assert owned and made.trust_env is False
    await made.aclose()
    mine = httpx.AsyncClient()
    given, owned = http_client_for(http_client=mine, transport=None, timeout=1.0)
    assert given is mine and not owned
    client = OpenVikingClient("http://ov.test", http_client=mine)
    await client.aclose()
    assert not mine.is_closed  # a caller's client is the caller's to close
    await mine.aclose()
