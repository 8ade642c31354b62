"""The LangGraph store over the real service process (loopback HTTP, the session's `service`).

`BridgeStore.over_service(url, api_key=...)`: every store step is an HTTP call authenticated by
the key; the BaseStore conformance set of tests/langgraph runs here unchanged (each test in a
fresh tenant, so its store starts empty), plus a cross-user read that must fail.
"""

from __future__ import annotations

import uuid
from typing import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("langgraph", reason="the LangGraph store needs the langgraph extra: pip install 'viking-bridge[langgraph]'")

from bridge.doors.langgraph import BridgeStore, NamespaceRefused  # noqa: E402
from tests.langgraph.test_store_conformance import (  # noqa: E402,F401 - the conformance set, re-run over HTTP
    test_a_value_that_is_not_json_is_refused, test_batch_answers_every_op_in_order, test_delete_removes_and_deleting_a_missing_item_is_a_no_op,
    test_get_of_a_missing_key_or_namespace_is_none, test_list_namespaces_with_conditions_depth_and_pages, test_put_overwrites_in_place_keeping_created_at,
    test_put_then_get_returns_the_value_key_namespace_and_times, test_search_by_prefix_returns_the_subtree_only, test_search_filters_exact_values_and_operators,
    test_search_pages_with_limit_and_offset, test_search_with_a_query_ranks_the_matching_item_first, test_store_fixture_is_empty, test_store_fixture_is_still_empty,
    test_a_ttl_the_bridge_cannot_store_is_refused_not_ignored,
)
from tests.service.servicekit import Service  # noqa: E402


@pytest.fixture
def tenant() -> str:
    return "lg" + uuid.uuid4().hex[:12]


@pytest_asyncio.fixture
async def store(service: Service, tenant: str) -> AsyncIterator[BridgeStore]:
    s = BridgeStore.over_service(service.url, api_key=service.api_key("alice", tenant=tenant, departments=["eng"], workspace="alpha"))
    yield s
    await s.bridge.aclose()


async def test_user_b_cannot_read_user_a_memory_over_http(service: Service, tenant: str, store: BridgeStore) -> None:
    await store.aput(("memories", "alice"), "allergy", {"text": "allergic to penicillin"})
    assert (await store.aget(("memories", "alice"), "allergy")).value == {"text": "allergic to penicillin"}  # type: ignore[union-attr]
    bob = BridgeStore.over_service(service.url, api_key=service.api_key("bob", tenant=tenant, departments=["eng"], workspace="alpha"))
    try:
        with pytest.raises(NamespaceRefused):
            await bob.aget(("memories", "alice"), "allergy")
        with pytest.raises(NamespaceRefused):
            await bob.asearch(("memories", "alice"), query="penicillin")
        assert await bob.asearch((), query="allergic to penicillin") == []
        assert await bob.aget(("memories",), "allergy") is None
    finally:
        await bob.bridge.aclose()
