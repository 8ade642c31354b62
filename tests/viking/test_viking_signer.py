"""Our SignerV4 must produce exactly the reference implementation's signature."""

from __future__ import annotations

import datetime as dt
import json
from collections import OrderedDict

import httpx
import pytest

from adapters.errors import PermissionDenied
from adapters.viking import RetryPolicy, SignerV4Auth, VikingMemoryClient
from adapters.viking.auth import sign_v4
from contract_tests.viking_simulator import VikingSimulator

SignerV4 = pytest.importorskip("volcengine.auth.SignerV4", reason="reference signer from PyPI `volcengine` (test extra) not installed").SignerV4
from volcengine.Credentials import Credentials  # noqa: E402
from volcengine.base.Request import Request  # noqa: E402

AK, SK = "AKLTfixedaccesskey", "Zml4ZWQtc2VjcmV0LWtleQ=="
X_DATE = "20250601T103045Z"
FIXED = dt.datetime(2025, 6, 1, 10, 30, 45, tzinfo=dt.timezone.utc)


def reference(method: str, host: str, path: str, query: dict[str, str], body: bytes, region: str) -> str:
    req = Request()
    req.method, req.path, req.body = method, path, body
    req.query = OrderedDict(query)
    req.headers = OrderedDict([("Host", host), ("Content-Type", "application/json")])
    original = SignerV4.get_current_format_date
    SignerV4.get_current_format_date = staticmethod(lambda: X_DATE)
    try:
        SignerV4.sign(req, Credentials(AK, SK, "air", region))
    finally:
        SignerV4.get_current_format_date = original
    return req.headers["Authorization"]


CASES = [
    ("POST", "api-knowledgebase.mlp.cn-beijing.volces.com", "/api/memory/search", {}, {"collection_name": "c", "filter": {"user_id": ["u1"]}, "query": "茶 and tea", "limit": 10}, "cn-beijing"),
    ("POST", "api-knowledgebase.mlp.cn-beijing.volces.com", "/api/memory/session/add", {}, {"session_id": "s_1", "messages": [{"role": "user", "content": "héllo ✓"}]}, "cn-beijing"),
    ("POST", "api-knowledgebase.mlp.cn-hongkong.bytepluses.com", "/api/memory/event/add", {"a": "1 2", "b": "x/y"}, {"memory_info": {"summary": "x"}}, "cn-hongkong"),
    ("GET", "localhost:8443", "/api/memory/ping", {}, None, "cn-beijing"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[2])
def test_signature_matches_reference_signer(case: tuple) -> None:
    method, host, path, query, payload, region = case
    body = b"" if payload is None else json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    import hashlib

    headers = {"Host": host, "Content-Type": "application/json", "X-Date": X_DATE, "X-Content-Sha256": hashlib.sha256(body).hexdigest()}
    ours = sign_v4(ak=AK, sk=SK, region=region, service="air", method=method, path=path, query=list(query.items()), headers=headers, body=body, x_date=X_DATE)
    assert ours == reference(method, host, path, query, body, region)


async def test_httpx_auth_flow_signs_the_bytes_on_the_wire_like_the_reference() -> None:
    captured: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        captured.append(request)
        return httpx.Response(200, json={"code": 0, "message": "success", "data": {"result_list": []}, "request_id": "r"})

    auth = SignerV4Auth(AK, SK, region="cn-beijing", clock=lambda: FIXED)
    client = VikingMemoryClient("https://api-knowledgebase.mlp.cn-beijing.volces.com", auth, transport=httpx.MockTransport(handler), retry=RetryPolicy(attempts=1))
    await client.search("c", filter={"user_id": ["ü1"]}, query="中文 query")
    sent = captured[0]
    assert sent.headers["x-date"] == X_DATE
    expected = reference("POST", "api-knowledgebase.mlp.cn-beijing.volces.com", "/api/memory/search", {}, sent.content, "cn-beijing")
    assert sent.headers["authorization"] == expected


async def test_simulator_verifies_signatures_and_rejects_tampering() -> None:
    sim = VikingSimulator()
    sim.create_collection("acme_mem")
    sim.add_credentials(AK, SK)
    good = VikingMemoryClient("https://v.test", SignerV4Auth(AK, SK), transport=sim.transport(), retry=RetryPolicy(attempts=1))
    assert await good.search("acme_mem", filter={"user_id": "u1"}) == []
    bad = VikingMemoryClient("https://v.test", SignerV4Auth(AK, "wrong-secret"), transport=sim.transport(), retry=RetryPolicy(attempts=1))
    with pytest.raises(PermissionDenied):
        await bad.search("acme_mem", filter={"user_id": "u1"})
    wrong_region = VikingMemoryClient("https://v.test", SignerV4Auth(AK, SK, region="cn-shanghai"), transport=sim.transport(), retry=RetryPolicy(attempts=1))
    with pytest.raises(PermissionDenied):
        await wrong_region.search("acme_mem", filter={"user_id": "u1"})

    class Tamper(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            forged = httpx.Request(request.method, request.url, headers=request.headers, content=request.content.replace(b"u1", b"u2"))
            return await sim.transport().handle_async_request(forged)

    tampered = VikingMemoryClient("https://v.test", SignerV4Auth(AK, SK), transport=Tamper(), retry=RetryPolicy(attempts=1))
    with pytest.raises(PermissionDenied):
        await tampered.search("acme_mem", filter={"user_id": "u1"})
