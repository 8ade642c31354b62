"""Accessibility of every console page, checked by axe-core (the engine browsers' own
accessibility tools use) inside the real Chromium, on pages holding real data."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_admin_console import Tenant, goto, sign_in
from tests.service.servicekit import Service

axe_sync = pytest.importorskip("axe_playwright_python.sync_playwright", reason="axe-core for Playwright (pip install -e '.[test]')")
from playwright.sync_api import expect  # noqa: E402

PAGES = ("Approval queue", "Memories", "Scopes", "Grants", "Manifests", "Audit log", "Who can read", "API keys", "Directory")


def _violations(page: Any) -> list[str]:
    results = axe_sync.Axe().run(page)
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in results.response["violations"]]


def test_every_console_page_has_no_axe_violations(page: Any, service: Service) -> None:
    tenant = Tenant(service)
    p = tenant.pending("Every service exposes /health")
    tenant.admin.post("/api/v1/grants", json={"grantee_user_id": "bob", "scope": p["scope"], "ttl_seconds": 600, "reason": "review"})
    page.goto(service.url + "/admin")
    found = {"sign in": _violations(page)}
    sign_in(page, service, tenant.admin_key)
    for name in PAGES:
        goto(page, name)
        expect(page.locator("#status")).not_to_be_empty()
        found[name] = _violations(page)
    goto(page, "Who can read")
    page.get_by_role("region", name="Who can read this memory, and why").get_by_label("Scope", exact=True).fill(p["scope"])
    page.get_by_role("region", name="Who can read this memory, and why").get_by_label("Memory id").fill(p["memory_id"])
    page.get_by_role("button", name="Explain").click()
    expect(page.get_by_role("table", name=f"Who can read {p['memory_id']}")).to_be_visible()
    found["who can read, answered"] = _violations(page)
    goto(page, "Memories")
    page.get_by_role("region", name="Browse and search memories").get_by_label("Scope").fill(p["scope"])
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("table", name=f"Memories of {p['scope']}")).to_be_visible()
    found["memories, searched"] = _violations(page)
    goto(page, "API keys")
    page.get_by_role("region", name="API keys of your tenant").get_by_label("User id").fill("dora")
    page.get_by_role("button", name="Issue key").click()
    expect(page.get_by_label("The new API key")).to_be_visible()
    found["api keys, one issued"] = _violations(page)
    goto(page, "Audit log")
    page.locator("#audit-out summary").first.click()
    found["audit, a detail opened"] = _violations(page)
    assert not {k: v for k, v in found.items() if v}, found


def test_console_is_operable_by_keyboard_alone(page: Any, service: Service) -> None:
    tenant = Tenant(service)
    p = tenant.pending("Keyboard users approve too")
    page.goto(service.url + "/admin")
    page.keyboard.press("Tab")  # the skip link comes first
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.get_by_label("API key or token").focus()
    page.keyboard.type(tenant.admin_key)
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_have_text("1 pending memory awaiting approval.")
    for _ in range(60):  # Tab until the approve button has focus, then press Enter
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label')") == f"Approve memory {p['memory_id']}":
            break
    else:
        pytest.fail("the approve button is not reachable with Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#status")).to_have_text(f"Approved memory {p['memory_id']}.")
    page.get_by_role("link", name="Scopes").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("table", name="Memories per scope of your tenant")).to_be_visible()
    assert page.evaluate("document.activeElement.id") == "scopes-title"  # focus moved to the new page's heading
