"""One service, several backends: every call goes to the backend its tenant is routed to, a search
spanning two backends is split and merged without widening, and an unrouted tenant is refused.

The contract suite runs whole on a routed table over three backend kinds (`--adapter routed`); these tests pin what the
suite cannot see from outside: where each memory physically lands, that a backend answering for
a scope it was not asked about is never believed, and the refusals of the routing table."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.base import Hit, NewMemory, Provenance, SearchQuery, SearchResult
from adapters.errors import BackendUnavailable, TenantNotRouted
from adapters.local import LocalBackend
from adapters.routing import RoutedBackend
from adapters.scopes import ScopeKey, ScopeSet
from bridge.assembly.backends import OpenRequest, backend_entry
from bridge.assembly.routes import load_routes
from bridge.assembly.settings import load_bridge_settings
from bridge.errors import ConfigurationError, NotPermitted
from bridge.facade import MemoryBridge
from tests.kit import make_identity

ACME = ScopeKey.private("acme", "alice")
GLOBEX = ScopeKey.private("globex", "bob")
GLOBAL = ScopeKey.global_()


def _note(text: str) -> NewMemory:
    return NewMemory(content=text, kind="fact", provenance=Provenance(author_user_id="alice", author_agent_id="coder"))


@pytest.fixture
def pair(tmp_path: Path):
    a, b = LocalBackend(tmp_path / "a"), LocalBackend(tmp_path / "b")
    routed = RoutedBackend({"a": a, "b": b}, {"acme": "a", "globex": "b"}, global_home="b")
    yield routed, a, b
    asyncio.run(routed.aclose())


async def test_each_tenants_memories_land_on_its_own_backend_only(pair) -> None:
    routed, a, b = pair
    m1 = await routed.put(ACME, _note("acme deploys on fridays"), idempotency_key="k1")
    m2 = await routed.put(GLOBEX, _note("globex deploys on mondays"), idempotency_key="k1")
    g = await routed.put(GLOBAL, _note("the company deploys with care"), idempotency_key="k1")
    assert [m.id for m in await a.list(ACME)] == [m1.id] and await b.list(ACME) == []
    assert [m.id for m in await b.list(GLOBEX)] == [m2.id] and await a.list(GLOBEX) == []
    assert [m.id for m in await b.list(GLOBAL)] == [g.id] and await a.list(GLOBAL) == []
    assert await routed.list_scopes("acme") == [ACME] and await routed.list_scopes("globex") == [GLOBEX]
    # a search over acme + global spans both backends and merges; globex's row is never a candidate
    found = await routed.search(SearchQuery(scopes=ScopeSet.of(ACME, GLOBAL), text="deploys", limit=10))
    assert found.complete and {h.memory.id for h in found.hits} == {m1.id, g.id}
    assert routed.home_of("acme") == "a (local)" and routed.home_of("globex") == "b (local)"


async def test_a_tenant_missing_from_the_table_is_refused_never_defaulted(pair) -> None:
    routed, a, b = pair
    stranger = ScopeKey.private("initech", "carol")
    with pytest.raises(TenantNotRouted, match="initech"):
        await routed.put(stranger, _note("x"), idempotency_key="k")
    with pytest.raises(TenantNotRouted):  # one unrouted entry refuses the whole search
        await routed.search(SearchQuery(scopes=ScopeSet.of(ACME, stranger), text="x"))
    with pytest.raises(TenantNotRouted):
        await routed.list_scopes("initech")
    assert await a.list_scopes("initech") == [] and await b.list_scopes("initech") == []
    no_global = RoutedBackend({"a": a}, {"acme": "a"}, global_home=None)
    with pytest.raises(TenantNotRouted, match="global"):
        await no_global.get(GLOBAL, "m1")
    # through the bridge: the refusal is a NotPermitted (403 at the service), naming the tenant
    bridge = MemoryBridge(routed)
    with pytest.raises(NotPermitted, match="initech"):
        await bridge.remember(make_identity("carol", tenant="initech"), "carol likes tea", "preference")
    with pytest.raises(NotPermitted, match="initech"):  # a refusal, not a RecallIncomplete inviting a retry
        await bridge.recall(make_identity("carol", tenant="initech"), "tea")


class _Liar:
    """A backend that answers every search with a row of a scope it was not asked about."""

    name = "liar"

    def __init__(self, inner: LocalBackend, foreign: Any) -> None:
        self.inner, self.foreign, self.capabilities = inner, foreign, inner.capabilities

    async def search(self, query: SearchQuery) -> SearchResult:
        result = await self.inner.search(query)
        return replace(result, hits=result.hits + (Hit(self.foreign, self.foreign.scope, 1.0),))

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_backend_answering_for_a_scope_routed_elsewhere_is_not_believed(tmp_path: Path) -> None:
    a, b = LocalBackend(tmp_path / "a"), LocalBackend(tmp_path / "b")
    secret = await b.put(GLOBEX, _note("globex's merger plan"), idempotency_key="k")
    routed = RoutedBackend({"a": _Liar(a, secret), "b": b}, {"acme": "a", "globex": "b"}, global_home="b")  # type: ignore[dict-item]
    try:
        await a.put(ACME, _note("acme's merger plan"), idempotency_key="k")
        found = await routed.search(SearchQuery(scopes=ScopeSet.of(ACME), text="merger plan", limit=10))
        assert [h.memory.content for h in found.hits] == ["acme's merger plan"], "a row of another backend's tenant was returned"
    finally:
        await routed.aclose()


class _Broken:
    name = "broken"

    def __init__(self, inner: LocalBackend) -> None:
        self.inner, self.capabilities = inner, inner.capabilities

    async def search(self, query: SearchQuery) -> SearchResult:
        raise BackendUnavailable("down", backend=self.name)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_fan_out_with_one_backend_failing_fails_the_search(tmp_path: Path) -> None:
    a, b = LocalBackend(tmp_path / "a"), LocalBackend(tmp_path / "b")
    routed = RoutedBackend({"a": a, "b": _Broken(b)}, {"acme": "a"}, global_home="b")  # type: ignore[dict-item]
    try:
        await a.put(ACME, _note("acme fact"), idempotency_key="k")
        with pytest.raises(BackendUnavailable):  # never acme's half presented as the whole answer
            await routed.search(SearchQuery(scopes=ScopeSet.of(ACME, GLOBAL), text="fact"))
    finally:
        await routed.aclose()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "routes.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, complaint", [
    ('[backends.a]\nbackend = "local"\n[tenants]\nacme = "a"\n', "global"),
    ('global = "a"\n[backends.a]\nbackend = "local"\n[tenants]\nacme = "b"\n', "undefined backend"),
    ('global = "a"\nfallback = "a"\n[backends.a]\nbackend = "local"\n', "unknown key"),
    ('global = "a"\n[backends.a]\nbackend = "routed"\n', "another routed"),
    ('global = "a"\n[backends.a]\nhome = "/x"\n', "needs backend"),
    ('global = "a"\n[backends.a]\nbackend = "local"\n[tenants]\n"bad tenant!" = "a"\n', "tenants"),
    ('global = "a"\n[backends.a\n', "not valid TOML"),
])
def test_a_bad_routing_table_is_refused_at_start_up(tmp_path: Path, text: str, complaint: str) -> None:
    with pytest.raises(ConfigurationError, match=complaint):
        load_routes(_write(tmp_path, text))


def test_the_registry_opens_a_routed_service_from_its_table(tmp_path: Path) -> None:
    routes = _write(tmp_path, f'global = "main"\n[tenants]\nacme = "main"\ndev = "scratch"\n'
                              f'[backends.main]\nbackend = "local"\nhome = "{tmp_path / "main"}"\n[backends.scratch]\nbackend = "local"\n')
    settings = load_bridge_settings(home=tmp_path / "home", backend="routed", routes_file=routes)
    backend = backend_entry("routed").open(OpenRequest(settings, state=None))  # type: ignore[arg-type]
    try:
        assert isinstance(backend, RoutedBackend) and backend.routes() == {"acme": "main", "dev": "scratch"}
        assert backend.backends["main"].path == tmp_path / "main" / "store"  # type: ignore[attr-defined]
        assert backend.backends["scratch"].path == tmp_path / "home" / "backends" / "scratch" / "store"  # type: ignore[attr-defined]
    finally:
        asyncio.run(backend.aclose())
    same = _write(tmp_path, f'global = "a"\n[backends.a]\nbackend = "local"\nhome = "{tmp_path}/x"\n[backends.b]\nbackend = "local"\nhome = "{tmp_path}/x"\n')
    with pytest.raises(ConfigurationError, match="one local store"):
        backend_entry("routed").open(OpenRequest(load_bridge_settings(backend="routed", routes_file=same), state=None))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="ROUTES_FILE"):
        backend_entry("routed").open(OpenRequest(load_bridge_settings(backend="routed"), state=None))  # type: ignore[arg-type]


async def test_a_bridge_from_settings_over_a_routed_table_keeps_tenants_on_their_stores(tmp_path: Path) -> None:
    routes = _write(tmp_path, 'global = "one"\n[tenants]\nacme = "one"\nglobex = "two"\n'
                              '[backends.one]\nbackend = "local"\n[backends.two]\nbackend = "local"\n')
    settings = load_bridge_settings(home=tmp_path / "home", backend="routed", routes_file=routes, embedder="hashing")
    bridge = MemoryBridge.from_settings(settings)
    try:
        alice, bob = make_identity("alice"), make_identity("bob", tenant="globex")
        await bridge.remember(alice, "alice drinks oolong tea", "preference")
        await bridge.remember(bob, "bob drinks oolong tea", "preference")
        seen_a = [m.content for m in (await bridge.recall(alice, "oolong tea", min_score=0.0)).items]
        seen_b = [m.content for m in (await bridge.recall(bob, "oolong tea", min_score=0.0)).items]
        assert seen_a == ["alice drinks oolong tea"] and seen_b == ["bob drinks oolong tea"]
        one, two = bridge.backend.backends["one"], bridge.backend.backends["two"]
        assert await one.list_scopes("globex") == [] and await two.list_scopes("acme") == []
    finally:
        await bridge.aclose()


def test_a_routed_table_with_a_local_store_behind_shared_state_is_refused(tmp_path: Path) -> None:
    # replicas share the state; a local store is one machine's, so their tenants would split
    routes = _write(tmp_path, 'global = "one"\n[backends.one]\nbackend = "local"\n')
    settings = load_bridge_settings(home=tmp_path, backend="routed", routes_file=routes, state_url="postgresql://u:p@db.invalid/x")
    with pytest.raises(ConfigurationError, match=r"\[backends.one\].*one machine's store"):
        backend_entry("routed").open(OpenRequest(settings, state=None))  # type: ignore[arg-type]
