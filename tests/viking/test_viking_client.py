"""The client speaks Viking's envelopes and maps every code class onto the adapter error tree."""

from __future__ import annotations

import json

import httpx
import pytest

from adapters.errors import InvalidRequest, BackendNotFound, PermissionDenied, BackendRateLimited, RetryLater, BackendUnavailable
from adapters.viking import ApiKeyAuth, RetryPolicy, SignerV4Auth, VikingCollectionMissing, VikingMemoryClient
from contract_tests.viking_simulator import Fault, VikingSimulator

NO_RETRY = RetryPolicy(attempts=1)


def canned(status: int, payload: object, headers: dict[str, str] | None = None) -> VikingMemoryClient:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(payload, (dict, list)):
            return httpx.Response(status, json=payload, headers=headers)
        return httpx.Response(status, text=str(payload), headers=headers)

    return VikingMemoryClient("https://v.test", ApiKeyAuth("key"), transport=httpx.MockTransport(handler), retry=NO_RETRY)


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, 1000001, PermissionDenied),
        (400, 1000003, InvalidRequest),
        (404, 1000005, VikingCollectionMissing),
        (404, 1000011, BackendNotFound),
        (400, 1000019, InvalidRequest),
        (503, 1000023, RetryLater),
        (500, 1000025, BackendUnavailable),
        (500, 1000028, BackendUnavailable),
        (429, 1000029, BackendRateLimited),
        (200, 1000029, BackendRateLimited),  # a code in a 200 answer still fails
    ],
)
async def test_each_code_class_raises_its_typed_error(status: int, code: int, expected: type) -> None:
    client = canned(status, {"code": code, "message": "nope", "request_id": "r-1"})
    with pytest.raises(expected) as info:
        await client.search("c", filter={"user_id": "u1"})
    assert info.value.code == code and info.value.request_id == "r-1" and info.value.http_status == status


async def test_code_1000005_is_a_config_error_not_a_retry() -> None:
    client = canned(404, {"code": 1000005, "message": "collection missing", "request_id": "r"})
    with pytest.raises(InvalidRequest):
        await client.search("c", filter={"user_id": "u1"})


@pytest.mark.parametrize(("status", "expected"), [(429, BackendRateLimited), (500, BackendUnavailable), (502, BackendUnavailable), (503, BackendUnavailable), (504, BackendUnavailable), (403, PermissionDenied)])
async def test_bare_http_errors_are_typed(status: int, expected: type) -> None:
    client = canned(status, "<html>gateway</html>")
    with pytest.raises(expected):
        await client.search("c", filter={"user_id": "u1"})


async def test_older_response_metadata_error_form_is_understood() -> None:
    client = canned(400, {"ResponseMetadata": {"RequestId": "r-9", "Error": {"Code": "1000019", "Message": "bad filter"}}})
    with pytest.raises(InvalidRequest) as info:
        await client.search("c", filter={"user_id": "u1"})
    assert info.value.code == 1000019 and info.value.request_id == "r-9"


async def test_a_200_that_is_not_an_envelope_is_not_success() -> None:
    client = canned(200, "<html>captive portal</html>")
    with pytest.raises(BackendUnavailable):
        await client.search("c", filter={"user_id": "u1"})


async def test_success_envelope_returns_data_and_sends_exact_json_bytes() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"code": 0, "message": "success", "data": {"result_list": [{"id": "e1"}]}, "request_id": "r"})

    client = VikingMemoryClient("https://v.test", ApiKeyAuth("key"), transport=httpx.MockTransport(handler), retry=NO_RETRY)
    rows = await client.search("coll", filter={"user_id": ["u1"], "memory_type": ["sys_event_v1"]}, query="茶", limit=7, kind="event")
    assert rows == [{"id": "e1"}]
    body = json.loads(seen[0].content)
    assert seen[0].url.path == "/api/memory/event/search"
    assert body == {"collection_name": "coll", "project_name": "default", "filter": {"user_id": ["u1"], "memory_type": ["sys_event_v1"]}, "query": "茶", "limit": 7}
    assert seen[0].headers["content-type"] == "application/json"


async def test_client_refuses_a_search_without_user_or_assistant() -> None:
    client = canned(200, {"code": 0, "data": {}})
    with pytest.raises(ValueError):
        await client.search("c", filter={"group_id": "g"})
    with pytest.raises(ValueError):
        await client.event_batch_delete("c", {"group_id": "g"})


async def test_collection_api_uses_pascal_case_and_result_envelope() -> None:
    sim = VikingSimulator()
    sim.add_credentials("AKLTexample", "c2VjcmV0LXNr")
    client = VikingMemoryClient("https://v.test", SignerV4Auth("AKLTexample", "c2VjcmV0LXNr"), transport=sim.transport(), retry=NO_RETRY)
    created = await client.collection_create("bridge_acme", custom_event_types=[{"EventType": "vb_memory_v1"}])
    assert created["CollectionName"] == "bridge_acme"
    info = await client.collection_info("bridge_acme")
    assert "vb_memory_v1" in info["EventTypes"]
    assert sim.calls_to("/collection/create")[0]["CollectionName"] == "bridge_acme"
    with pytest.raises(VikingCollectionMissing):
        await client.collection_info("nope_missing")


async def test_api_key_cannot_manage_collections_and_is_bound_to_its_collections() -> None:
    sim = VikingSimulator()
    sim.create_collection("acme_mem")
    sim.create_collection("other_mem")
    sim.add_api_key("k-acme", collections={"acme_mem"})
    client = VikingMemoryClient("https://v.test", ApiKeyAuth("k-acme"), transport=sim.transport(), retry=NO_RETRY)
    assert await client.search("acme_mem", filter={"user_id": "u1"}) == []
    with pytest.raises(PermissionDenied):
        await client.search("other_mem", filter={"user_id": "u1"})
    with pytest.raises(PermissionDenied):
        await client.collection_info("acme_mem")
    wrong = VikingMemoryClient("https://v.test", ApiKeyAuth("k-wrong"), transport=sim.transport(), retry=NO_RETRY)
    with pytest.raises(PermissionDenied):
        await wrong.search("acme_mem", filter={"user_id": "u1"})


async def test_ping_and_legacy_error_switch() -> None:
    sim = VikingSimulator()
    sim.create_collection("acme_mem")
    sim.add_api_key("k")
    client = VikingMemoryClient("https://v.test", ApiKeyAuth("k"), transport=sim.transport(), retry=NO_RETRY)
    assert (await client.ping())["status"] == "ok"
    sim.legacy_errors = True
    with pytest.raises(InvalidRequest) as info:
        await client.search("acme_mem", filter={"user_id": "u1", "nonsense": 1})
    assert info.value.code == 1000019


async def test_simulator_enforces_service_rules(sim: VikingSimulator) -> None:
    sim.create_collection("acme_mem")
    sim.add_api_key("k")
    client = VikingMemoryClient("https://v.test", ApiKeyAuth("k"), transport=sim.transport(), retry=NO_RETRY)
    with pytest.raises(InvalidRequest):  # memory_type is required on event search
        await client.search("acme_mem", filter={"user_id": "u1"}, kind="event")
    with pytest.raises(InvalidRequest):  # ids outside the service alphabet
        await client.search("acme_mem", filter={"user_id": "john.doe@x"})
    with pytest.raises(InvalidRequest):  # session ids: letters, digits, underscore; start with a letter
        await client.session_add("acme_mem", "a-b-c", [{"role": "user", "content": "hi"}], {"default_user_id": "u1"})
    with pytest.raises(InvalidRequest):  # at most 1000 messages
        await client.session_add("acme_mem", "s1", [{"role": "user", "content": "x"}] * 1001, {"default_user_id": "u1"})
    await client.session_add("acme_mem", "s1", [{"role": "user", "content": "first"}], {"default_user_id": "u1"})
    await client.session_add("acme_mem", "s1", [{"role": "user", "content": "second"}], {"default_user_id": "u1"})
    rows = await client.search("acme_mem", filter={"user_id": "u1"})
    assert [r["memory_info"]["summary"] for r in rows] == ["second"]  # reuse overwrote


async def test_get_context_and_profiles(sim: VikingSimulator) -> None:
    sim.create_collection("acme_mem")
    sim.add_api_key("k")
    client = VikingMemoryClient("https://v.test", ApiKeyAuth("k"), transport=sim.transport(), retry=NO_RETRY)
    pid = await client.profile_add("acme_mem", profile_type="sys_profile_v1", memory_info={"user_profile": "likes tea"}, user_id="u1")
    again = await client.profile_add("acme_mem", profile_type="sys_profile_v1", memory_info={"user_profile": "likes green tea"}, user_id="u1")
    assert pid == again
    rows = await client.search("acme_mem", filter={"user_id": "u1", "memory_type": ["sys_profile_v1"]}, kind="profile")
    assert [r["memory_info"]["user_profile"] for r in rows] == ["likes green tea"]
    ctx = await client.get_context("acme_mem", filter={"user_id": "u1"}, query="tea")
    assert "green tea" in ctx["context"]


async def test_timeout_fault_surfaces_as_unavailable(sim: VikingSimulator) -> None:
    sim.create_collection("acme_mem")
    sim.add_api_key("k")
    sim.inject(Fault("timeout", times=-1))
    client = VikingMemoryClient("https://v.test", ApiKeyAuth("k"), transport=sim.transport(), retry=NO_RETRY)
    with pytest.raises(BackendUnavailable):
        await client.search("acme_mem", filter={"user_id": "u1"})
