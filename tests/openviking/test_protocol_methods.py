"""The protocol's newer methods on OpenViking (put.created, find_by_idempotency_key, list_page)
against the real 0.5.2 server, and — with a scripted transport, no server — the fail-closed
shape of a search and the public error tree."""

from __future__ import annotations

import httpx
import pytest

from adapters.base import SearchQuery, Status
from adapters.errors import BackendError, InvalidRequest, NotSent
from adapters.openviking import OpenVikingBackend
from adapters.openviking.client import Auth, OpenVikingClient, RetryPolicy, SecretKey
from adapters.scopes import ScopeKey, ScopeSet
from tests.openviking.ovhelpers import mem

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")
WS = ScopeKey.workspace("acme", "alpha")
ROOT = "root-key-SUPERSECRET-0004"


async def test_put_says_whether_it_created_the_memory_and_the_key_finds_it(api_backend: OpenVikingBackend) -> None:
    first = await api_backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    again = await api_backend.put(ALICE, mem("alice likes tea"), idempotency_key="a1")
    assert (first.created, again.created) == (True, False) and again == first
    assert await api_backend.find_by_idempotency_key(ALICE, "a1") == first
    assert await api_backend.find_by_idempotency_key(ALICE, "never") is None
    assert await api_backend.find_by_idempotency_key(BOB, "a1") is None  # never provisioned, never widened


async def test_list_page_walks_a_scope_in_windows_even_while_it_is_being_erased(api_backend: OpenVikingBackend) -> None:
    """fs/ls windows of 4 entries and pages of 2, deleting every memory as soon as its page is
    read (what erasure does): every memory is visited exactly once, none is skipped."""
    api_backend._ls_window = 4
    ids = set()
    for i in range(11):
        ids.add((await api_backend.put(WS, mem(f"note {i}", status=Status.PENDING if i == 5 else Status.ACTIVE), idempotency_key=f"k{i}")).id)
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        page = await api_backend.list_page(WS, cursor=cursor, limit=2)
        assert len(page.memories) <= 2
        for m in page.memories:
            seen.append(m.id)
            assert await api_backend.delete(WS, m.id)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert cursor is None and sorted(seen) == sorted(ids) and len(seen) == len(set(seen))


async def test_list_page_filters_statuses_and_refuses_foreign_cursors(api_backend: OpenVikingBackend) -> None:
    for i in range(5):
        await api_backend.put(WS, mem(f"note {i}", status=Status.PENDING if i % 2 else Status.ACTIVE), idempotency_key=f"k{i}")
        await api_backend.put(ALICE, mem(f"alice {i}"), idempotency_key=f"a{i}")
    page = await api_backend.list_page(WS, limit=2, statuses=frozenset({Status.PENDING}))
    assert [m.status for m in page.memories] == [Status.PENDING, Status.PENDING]
    first = await api_backend.list_page(WS, limit=1)
    assert first.next_cursor is not None
    with pytest.raises(InvalidRequest):
        await api_backend.list_page(ALICE, cursor=first.next_cursor, limit=1)
    body, tag = first.next_cursor.split(".")
    with pytest.raises(InvalidRequest):
        await api_backend.list_page(WS, cursor=body + "." + tag[::-1], limit=1)


def _scripted_backend(handler) -> OpenVikingBackend:
    async def no_sleep(seconds: float) -> None:
        pass

    client = OpenVikingClient("http://ov.test", transport=httpx.MockTransport(handler), retry=RetryPolicy(attempts=2, sleep=no_sleep))
    return OpenVikingBackend(client, root_key=ROOT, mode="trusted", namespace="t1")


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"status": "error", "result": None, "error": {"code": code, "message": message, "details": {}}})


async def test_every_scope_failing_and_one_scope_failing_have_the_same_shape() -> None:
    """A 'bad request' answer for one scope used to escape as an
    exception while a 503 was a failed scope; now every per-scope failure is a failed scope,
    with a reason that carries no secret (the server echoes the key here)."""
    bob_user = None

    def handler(request: httpx.Request) -> httpx.Response:
        key = request.headers.get("x-api-key")
        if bob_user and bob_user in request.headers.get("x-openviking-user", ""):
            return _error(400, "INVALID_ARGUMENT", f"bad request from {key}")
        return _error(503, "UNAVAILABLE", f"down for {key}")

    backend = _scripted_backend(handler)
    bob_user = backend.mapper.principal(BOB).user
    every = await backend.search(SearchQuery(ScopeSet.of(ALICE, BOB, WS), "tea"))
    assert set(every.failed_scopes) == {ALICE, BOB, WS} and len(every.failure_reasons) == 3 and every.hits == ()
    assert all(ROOT not in r and "<redacted>" in r for r in every.failure_reasons)
    bob_only = await backend.search(SearchQuery(ScopeSet.of(BOB), "tea"))
    assert bob_only.failed_scopes == (BOB,) and "OVInvalidArgument" in bob_only.failure_reasons[0]


async def test_no_private_class_escapes_as_an_error_type() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = OpenVikingClient("http://ov.test", transport=httpx.MockTransport(refuse), retry=RetryPolicy(attempts=1))
    with pytest.raises(BackendError) as info:
        await client.read(Auth(SecretKey("k")), "viking://user/u/memories/vb/m.md")
    assert isinstance(info.value, NotSent)
    assert all(not cls.__name__.startswith("_") for cls in type(info.value).__mro__)


async def test_list_sees_every_record_beyond_one_listing_window(api_backend: OpenVikingBackend) -> None:
    """0.5.2's fs/ls answers at most `node_limit` entries; `list` used to stop at the first answer."""
    api_backend._ls_window = 3
    ids = {(await api_backend.put(WS, mem(f"note {i}"), idempotency_key=f"k{i}")).id for i in range(8)}
    assert {m.id for m in await api_backend.list(WS)} == ids
