"""Scope mapping: injective, OpenViking-valid names; traversal rejected before any request."""

from __future__ import annotations

import httpx
import pytest

from adapters.base import SearchQuery
from adapters.errors import InvalidRequest, BackendNotFound
from adapters.openviking import OpenVikingBackend
from adapters.openviking.mapping import OV_NAME, ScopeMapper, validate_ov_name
from adapters.scopes import ScopeKey, ScopeSet, Visibility
from tests.openviking.ovhelpers import mem

TRICKY = ["john_doe", "john-doe", "john.doe", "foo", "foobar", "a%b", "a*b", "a+b", "a=b", "a~b", "zoë", "研发部",
          "u@x", "u@@x", "_x", "a" * 128]


def _names(scope: ScopeKey) -> tuple[str, str, str | None]:
    p = ScopeMapper("vb").principal(scope)
    return p.account, p.user, p.peer


def test_every_mapped_name_is_a_valid_openviking_id_and_the_mapping_is_injective():
    scopes = [ScopeKey.global_()]
    for t in TRICKY[:6]:
        scopes.append(ScopeKey.tenant(t))
        for x in TRICKY:
            scopes += [ScopeKey.private(t, x), ScopeKey.workspace(t, x), ScopeKey.department(t, x),
                       ScopeKey.agent(t, x, "u1"), ScopeKey.agent(t, "coder", x)]
    seen: dict[tuple, ScopeKey] = {}
    for scope in scopes:
        names = _names(scope)
        for name in names:
            if name is not None:
                assert OV_NAME.match(name) and len(name) <= 255 and name.count("@") <= 1, name
        assert not names[0].startswith("_")
        assert names not in seen, f"{scope} and {seen.get(names)} map to the same principal {names}"
        seen[names] = scope


def test_lookalike_ids_get_distinct_principals():
    assert _names(ScopeKey.private("acme", "john_doe")) != _names(ScopeKey.private("acme", "john-doe"))
    assert _names(ScopeKey.private("acme", "foo"))[1] != _names(ScopeKey.private("acme", "foobar"))[1]
    # a workspace named like a user never shares the user's principal
    assert _names(ScopeKey.workspace("acme", "u17")) != _names(ScopeKey.private("acme", "u17"))


def _forged(**fields) -> ScopeKey:
    """A ScopeKey that skipped validation (what a buggy caller or a pickle could hand us)."""
    key = object.__new__(ScopeKey)
    values = {"visibility": Visibility.PRIVATE, "tenant_id": "acme", "owner_id": "alice", "user_id": None, **fields}
    for name, value in values.items():
        object.__setattr__(key, name, value)
    if "_hash" in getattr(ScopeKey, "__slots__", ()):  # ScopeKey memoises its hash (set in __post_init__, skipped here)
        object.__setattr__(key, "_hash", hash((values["visibility"].value, values["tenant_id"], values["owner_id"], values["user_id"])))
    return key


BAD = ["../bob", "..", "a/b", "alice/../../bob", "a%2e%2e", "a\\b", "x\x00y", ""]


@pytest.mark.parametrize("evil", BAD)
async def test_path_traversal_in_any_id_is_rejected_before_any_request(evil):
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(500)

    backend = OpenVikingBackend.connect("http://ov.test", "root-key", transport=httpx.MockTransport(handler))
    forged = [_forged(owner_id=evil), _forged(tenant_id=evil),
              _forged(visibility=Visibility.AGENT, owner_id="coder", user_id=evil)]
    for scope in forged:
        if evil == "a%2e%2e":  # legal in our grammar: it must map to a hashed, harmless name instead
            p = backend.mapper.principal(scope)
            assert "%" not in p.memory_dir and ".." not in p.memory_dir
            continue
        with pytest.raises(InvalidRequest):
            await backend.put(scope, mem("x"), idempotency_key="k")
        with pytest.raises(InvalidRequest):
            await backend.get(scope, "m" + "0" * 32)
        with pytest.raises(InvalidRequest):
            await backend.list(scope)
        with pytest.raises(InvalidRequest):
            await backend.search(SearchQuery(ScopeSet.of(scope), "x"))
    assert requests == [], [str(r.url) for r in requests]
    await backend.aclose()


@pytest.mark.parametrize("memory_id", ["../../u-bob/memories/vb/m1", "m1/../x", "M" + "0" * 32, "", "m" + "0" * 31 + "/"])
async def test_memory_id_traversal_is_not_found_without_a_request(memory_id):
    requests: list[httpx.Request] = []
    backend = OpenVikingBackend.connect("http://ov.test", "root-key",
                                        transport=httpx.MockTransport(lambda r: requests.append(r) or httpx.Response(500)))
    with pytest.raises(BackendNotFound):
        await backend.get(ScopeKey.private("acme", "alice"), memory_id)
    assert await backend.delete(ScopeKey.private("acme", "alice"), memory_id) is False
    assert requests == []
    await backend.aclose()


def test_validate_ov_name_rules():
    for bad in ["", "a/b", "..", "a..b", "a@b@c", "x" * 256, "é"]:
        with pytest.raises(InvalidRequest):
            validate_ov_name(bad, "user")
    with pytest.raises(InvalidRequest):
        validate_ov_name("_acct", "account", account=True)
    assert validate_ov_name("u-alice-0123", "user") == "u-alice-0123"
