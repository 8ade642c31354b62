"""The admin console of a routed service (VIKING_BRIDGE_BACKEND=routed) names, for the tenant
signed in, the backend its routing table puts that tenant's memories on: an admin of a tenant
on backend `north` reads "memories on north (local)", one of a tenant on `south` reads "south".

Its own `serve` process (two local stores behind a routes file), started once for this module."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.service.servicekit import Service, spawn_service

pytest.importorskip("playwright", reason="the browser tests drive Chromium with Playwright (pip install -e '.[test]')")
from playwright.sync_api import expect  # noqa: E402


@pytest.fixture(scope="module")
def routed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("routed-console")
    routes = tmp / "routes.toml"
    routes.write_text(
        'global = "north"\n[tenants]\nacme = "north"\nglobex = "south"\n'
        f'[backends.north]\nbackend = "local"\nhome = "{tmp / "north"}"\n'
        f'[backends.south]\nbackend = "local"\nhome = "{tmp / "south"}"\n'
    )
    service = spawn_service(tmp, env={"VIKING_BRIDGE_BACKEND": "routed", "VIKING_BRIDGE_ROUTES_FILE": str(routes),
                                      "VIKING_BRIDGE_EMBEDDER": "hashing"})
    try:
        yield service
    finally:
        service.stop()


@pytest.mark.parametrize(("tenant", "home"), [("acme", "north (local)"), ("globex", "south (local)")])
def test_the_console_names_the_backend_of_the_signed_in_tenant(page: Any, routed_service: Service, tenant: str, home: str) -> None:
    key = routed_service.api_key("root", tenant=tenant, roles=["admin"])
    page.goto(routed_service.url + "/admin")
    page.get_by_label("API key or token").fill(key)
    page.get_by_label("API key or token").press("Enter")
    expect(page.locator("#signed-in-as")).to_have_text(f"Signed in as {tenant}/root@assistant (admin); memories on {home}")
    assert not page.problems, page.problems
