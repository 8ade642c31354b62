"""Secrets never appear in reprs, log lines or error messages."""

from __future__ import annotations

import logging

import httpx
import pytest

from adapters.errors import BackendError
from adapters.viking import ApiKeyAuth, RetryPolicy, SignerV4Auth, VikingBackend, VikingConfig, VikingMemoryClient

API_KEY = "sk-live-SUPERSECRET-apikey-0001"
SECRET_KEY = "SUPERSECRET-signing-key-0002"


def echoing_server(secret: str):
    # A hostile or buggy server that echoes the caller's credentials back in its error message.
    def handler(request: httpx.Request) -> httpx.Response:
        message = f"auth failed for {request.headers.get('authorization')} / {secret}"
        return httpx.Response(400, json={"code": 1000001, "message": message, "request_id": "r"})

    return handler


@pytest.mark.parametrize(
    ("auth", "secret"), [(ApiKeyAuth(API_KEY), API_KEY), (SignerV4Auth("AKLTvisible", SECRET_KEY), SECRET_KEY)], ids=["api_key", "signer_v4"]
)
async def test_secrets_absent_from_repr_logs_and_errors(auth: ApiKeyAuth | SignerV4Auth, secret: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = VikingMemoryClient("https://v.test", auth, transport=httpx.MockTransport(echoing_server(secret)), retry=RetryPolicy(attempts=1))
    backend = VikingBackend(client, VikingConfig(collections={"acme": "acme_mem"}))
    texts = [repr(auth), str(auth), repr(client), repr(backend)]
    with pytest.raises(BackendError) as info:
        await client.search("acme_mem", filter={"user_id": "u1"})
    texts += [str(info.value), repr(info.value), caplog.text]
    for text in texts:
        assert API_KEY not in text and SECRET_KEY not in text, text
    assert "<redacted>" in str(info.value)


async def test_network_errors_do_not_leak_secrets(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout(f"timeout with {request.headers['authorization']}", request=request)

    client = VikingMemoryClient("https://v.test", ApiKeyAuth(API_KEY), transport=httpx.MockTransport(boom), retry=RetryPolicy(attempts=1))
    with pytest.raises(BackendError) as info:
        await client.search("acme_mem", filter={"user_id": "u1"})
    assert API_KEY not in str(info.value) and API_KEY not in caplog.text
    assert info.value.__cause__ is None and info.value.__suppress_context__
