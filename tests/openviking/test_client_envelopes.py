"""The client against the real server: envelopes, typed errors, retries, secrecy of keys."""

from __future__ import annotations

import httpx
import pytest

from adapters.errors import InvalidRequest, BackendNotFound, PermissionDenied, BackendRateLimited, BackendUnavailable
from adapters.openviking.client import Auth, OpenVikingClient, RetryPolicy, SecretKey
from adapters.openviking.errors import (
    OVInvalidArgument,
    OVNotFound,
    OVPermissionDenied,
    OVRateLimited,
    OVServerError,
    OVTransportError,
    OVUnauthenticated,
)
from tests.openviking.ovhelpers import unique

async def _no_sleep(seconds: float) -> None:
    """The shared RetryPolicy's injectable sleep: tests never really wait."""


NO_WAIT = RetryPolicy(attempts=3, sleep=_no_sleep)


async def _two_users(client: OpenVikingClient, root: str) -> tuple[str, Auth, Auth]:
    account = unique("envtest")
    r = Auth(SecretKey(root))
    await client.create_account(r, account, "vb-admin")
    a = await client.create_user(r, account, "alice", "user")
    b = await client.create_user(r, account, "bob", "user")
    return account, Auth(SecretKey(a["user_key"])), Auth(SecretKey(b["user_key"]))


async def test_health_reports_version_and_mode(api_key_server):
    client = OpenVikingClient(api_key_server[0])
    try:
        health = await client.health()
        assert health["version"] == "0.5.2" and health["auth_mode"] == "api_key"
        assert await client.ready()
    finally:
        await client.aclose()


async def test_error_envelopes_map_to_typed_errors_without_leaking_keys(api_key_server):
    url, root = api_key_server
    client = OpenVikingClient(url, retry=NO_WAIT)
    try:
        account, alice, bob = await _two_users(client, root)
        uri = "viking://user/alice/memories/vb/m1.md"
        await client.write(alice, uri, "hello", wait=True)
        assert await client.read(alice, uri) == "hello"

        with pytest.raises(OVNotFound) as missing:
            await client.read(alice, "viking://user/alice/memories/vb/nope.md")
        assert isinstance(missing.value, BackendNotFound) and missing.value.http_status == 404

        with pytest.raises(OVPermissionDenied) as denied:
            await client.read(bob, uri)
        assert isinstance(denied.value, PermissionDenied) and denied.value.code == "PERMISSION_DENIED"
        assert bob.key.reveal() not in str(denied.value) and bob.key.reveal() not in repr(denied.value.details)

        with pytest.raises(OVInvalidArgument) as invalid:  # request models forbid unknown fields
            await client.request("POST", "/api/v1/content/write", auth=alice, json={"uri": uri, "content": "x", "bogus": 1})
        assert isinstance(invalid.value, InvalidRequest)

        with pytest.raises(OVInvalidArgument):  # the server also rejects traversal; we never rely on it
            await client.write(alice, "viking://user/alice/memories/vb/../../bob/x.md", "x")

        wrong = Auth(SecretKey("not-a-real-key-" + "x" * 20))
        with pytest.raises((OVUnauthenticated, OVPermissionDenied)) as unauth:
            await client.read(wrong, uri)
        assert "not-a-real-key" not in str(unauth.value)
        await client.delete_account(Auth(SecretKey(root)), account)
    finally:
        await client.aclose()


def _scripted(statuses: list[int], calls: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        status = statuses[min(len(calls) - 1, len(statuses) - 1)]
        if status == 200:
            return httpx.Response(200, json={"status": "ok", "result": "done", "error": None})
        code = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 500: "INTERNAL"}[status]
        headers = {"Retry-After": "7"} if status == 429 else {}
        return httpx.Response(status, headers=headers, json={"status": "error", "result": None,
                                                             "error": {"code": code, "message": "busy", "details": {}}})
    return httpx.MockTransport(handler)


async def test_retries_transient_errors_with_injected_wait():
    calls: list[httpx.Request] = []
    client = OpenVikingClient("http://ov.test", transport=_scripted([503, 429, 200], calls), retry=NO_WAIT)
    assert await client.read(Auth(SecretKey("k")), "viking://user/u/memories/vb/m.md") == "done"
    assert len(calls) == 3


async def test_rate_limit_exhaustion_surfaces_retry_after():
    calls: list[httpx.Request] = []
    client = OpenVikingClient("http://ov.test", transport=_scripted([429], calls), retry=NO_WAIT)
    with pytest.raises(OVRateLimited) as exc:
        await client.read(Auth(SecretKey("k")), "viking://user/u/memories/vb/m.md")
    assert isinstance(exc.value, BackendRateLimited) and exc.value.retry_after == 7.0 and len(calls) == 3


async def test_non_idempotent_post_is_not_retried_after_a_server_error():
    calls: list[httpx.Request] = []
    client = OpenVikingClient("http://ov.test", transport=_scripted([500, 200], calls), retry=NO_WAIT)
    with pytest.raises(OVServerError) as exc:
        await client.add_message(Auth(SecretKey("k")), "s1", "user", "hi")
    assert isinstance(exc.value, BackendUnavailable) and len(calls) == 1


async def test_connect_errors_are_typed_and_retried():
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    client = OpenVikingClient("http://ov.test", transport=httpx.MockTransport(handler), retry=NO_WAIT)
    with pytest.raises(OVTransportError):
        await client.commit(Auth(SecretKey("k")), "s1")  # safe to retry: nothing reached the server
    assert len(calls) == 3


async def test_non_envelope_body_is_a_protocol_error():
    client = OpenVikingClient("http://ov.test", transport=httpx.MockTransport(lambda r: httpx.Response(200, text="<html>")),
                              retry=RetryPolicy(attempts=1))
    with pytest.raises(BackendUnavailable, match="envelope"):
        await client.read(Auth(SecretKey("k")), "viking://user/u/memories/vb/m.md")
