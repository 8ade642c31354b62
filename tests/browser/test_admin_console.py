"""The admin console end to end in a real headless Chromium against a real `viking-bridge serve`.

Each test seeds its own tenant through the HTTP API (so tests never see each other's data),
signs in with a credential the way an admin would (typing it, pressing Enter), works the page,
and checks the outcome through the API as well as on screen. A screenshot of each page is saved
and listed at the end of the run (tests/browser/conftest.py).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import httpx
import pytest

from identity.providers.api_keys import parse_api_key
from tests.browser.browserkit import Screenshots
from tests.service.servicekit import Service

pytest.importorskip("playwright", reason="the browser tests drive Chromium with Playwright (pip install -e '.[test]')")
from playwright.sync_api import expect  # noqa: E402

XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>"><svg onload="window.__pwned=3">'


class Tenant:
    """A fresh tenant: an admin, a member of department eng / workspace alpha, their clients."""

    def __init__(self, service: Service) -> None:
        self.id = "t" + secrets.token_hex(4)
        self.admin_key = service.api_key("root", tenant=self.id, roles=["admin"], departments=["eng"], workspace="alpha")
        self.member_key = service.api_key("alice", tenant=self.id, departments=["eng"], workspace="alpha", agent="brain")
        self.admin = service.client(self.admin_key)
        self.member = service.client(self.member_key)

    def pending(self, content: str) -> dict[str, Any]:
        w = self.member.post("/api/v1/memories", json={"content": content, "kind": "standard"})
        assert w.status_code == 201 and w.json()["status"] == "pending", w.text
        return w.json()


@pytest.fixture
def tenant(service: Service) -> Tenant:
    return Tenant(service)


def sign_in(page: Any, service: Service, key: str, *, remember: bool = False) -> None:
    page.goto(service.url + "/admin")
    page.get_by_label("API key or token").fill(key)
    if remember:
        page.get_by_label("Keep it for this browser tab (session storage)").check()
    page.get_by_label("API key or token").press("Enter")  # the keyboard submits the form
    expect(page.locator("#signed-in-as")).to_contain_text("Signed in as")


def goto(page: Any, name: str) -> None:
    page.get_by_role("navigation", name="Console pages").get_by_role("link", name=name).click()


def test_admin_approves_and_rejects_from_the_queue(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    keep, drop = tenant.pending("Every PR needs two reviews"), tenant.pending("Deploy on Fridays at 17:00")
    sign_in(page, service, tenant.admin_key)
    expect(page.locator("#status")).to_have_text("2 pending memories awaiting approval.")
    table = page.get_by_role("table", name="Pending memories awaiting your decision")
    expect(table.get_by_role("columnheader", name="Content")).to_be_visible()
    expect(table.get_by_role("row")).to_have_count(3)
    screenshots.take(page, "approval-queue")
    page.get_by_role("button", name=f"Approve memory {keep['memory_id']}").click()
    expect(page.locator("#status")).to_have_text(f"Approved memory {keep['memory_id']}.")
    reject = page.get_by_role("button", name=f"Reject memory {drop['memory_id']}")
    approve = page.get_by_role("button", name=f"Approve memory {drop['memory_id']}")
    assert reject.inner_text() != approve.inner_text() and "Reject" in reject.inner_text()
    colours = [b.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]") for b in (reject, approve)]
    assert colours[0] != colours[1], f"Reject must not look like Approve: {colours}"
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    reject.click()  # asked, and dismissed: nothing happens
    expect(page.locator("#status")).to_have_text(f"Kept memory {drop['memory_id']}: nothing was rejected.")
    assert asked and drop["memory_id"] in asked[0] and "cannot be undone" in asked[0]
    assert tenant.admin.get(f"/api/v1/memories/{drop['memory_id']}", params={"scope": drop["scope"]}).status_code == 200
    page.once("dialog", lambda d: d.accept())
    reject.click()
    expect(page.locator("#status")).to_have_text(f"Rejected memory {drop['memory_id']}.")
    expect(page.get_by_role("table", name="Pending memories awaiting your decision").get_by_role("row")).to_have_count(1)
    got = tenant.member.get(f"/api/v1/memories/{keep['memory_id']}", params={"scope": keep["scope"]})
    assert got.status_code == 200 and got.json()["status"] == "active"
    assert tenant.admin.get(f"/api/v1/memories/{drop['memory_id']}", params={"scope": drop["scope"]}).status_code == 404
    actions = {e["action"] for e in tenant.admin.get("/api/v1/audit", params={"limit": 50}).json()}
    assert {"approve", "reject"} <= actions
    assert not page.problems, page.problems


def test_admin_issues_and_revokes_a_grant(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    sign_in(page, service, tenant.admin_key)
    goto(page, "Grants")
    page.get_by_label("Grantee user id").fill("bob")
    page.get_by_label("Scope (e.g. acme/dept/sales)").fill(f"{tenant.id}/dept/sales")
    page.get_by_label("Expires after (hours)").fill("2")
    page.get_by_label("Reason (shown with every result it makes visible)").fill("quarterly <b>audit</b>")
    page.get_by_role("button", name="Issue grant").click()
    expect(page.locator("#status")).to_contain_text("Issued grant")
    grants = tenant.admin.get("/api/v1/admin/grants").json()
    assert [(g["grantee_user_id"], g["scope"], g["reason"]) for g in grants] == [("bob", f"{tenant.id}/dept/sales", "quarterly <b>audit</b>")]
    table = page.get_by_role("table", name="Grants of your tenant")
    expect(table.get_by_role("cell", name="quarterly <b>audit</b>")).to_be_visible()  # the reason is text, not markup
    screenshots.take(page, "grants")
    page.get_by_role("button", name=f"Revoke grant {grants[0]['grant_id']}").click()
    expect(page.locator("#status")).to_have_text(f"Revoked grant {grants[0]['grant_id']}.")
    assert tenant.admin.get("/api/v1/admin/grants").json() == []
    page.get_by_label("Also show expired and revoked grants").check()
    expect(page.get_by_role("table", name="Grants of your tenant").get_by_role("cell", name=re.compile("^revoked "))).to_be_visible()
    assert not page.problems, page.problems


def test_admin_revokes_a_manifest(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    w = tenant.member.post("/api/v1/memories", json={"content": "the build uses make", "kind": "fact"}).json()
    injected = tenant.member.post("/api/v1/inject-context", json={"agent_id": "helper", "task": "fix the build", "memory_refs": [{"scope": w["scope"], "memory_id": w["memory_id"]}]})
    assert injected.status_code == 200, injected.text
    manifest_id = injected.json()["manifest_id"]
    sign_in(page, service, tenant.admin_key)
    goto(page, "Manifests")
    table = page.get_by_role("table", name="Live injection manifests of your tenant")
    expect(table.locator("tbody tr").filter(has_text=manifest_id)).to_contain_text("fix the build")
    screenshots.take(page, "manifests")
    page.get_by_role("button", name=f"Revoke manifest {manifest_id}").click()
    expect(page.locator("#status")).to_have_text(f"Revoked manifest {manifest_id} and every manifest derived from it.")
    assert tenant.admin.get("/api/v1/admin/manifests").json() == []
    child = service.client(service.api_key("alice", tenant=tenant.id, departments=["eng"], workspace="alpha", agent="helper"))
    assert child.get("/api/v1/recall", params={"query": "build", "manifest_id": manifest_id}).status_code in (403, 409)
    assert not page.problems, page.problems


def test_audit_filters_narrow_the_rows(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    p = tenant.pending("Use UTC in every log line")
    tenant.admin.post(f"/api/v1/memories/{p['memory_id']}/approve", params={"scope": p["scope"]})
    tenant.admin.post("/api/v1/grants", json={"grantee_user_id": "bob", "scope": f"{tenant.id}/dept/ops", "ttl_seconds": 600, "reason": "on call"})
    sign_in(page, service, tenant.admin_key)
    goto(page, "Audit log")
    expect(page.locator("#status")).to_contain_text("audit rows match")
    audit = page.get_by_role("region", name="Audit log")
    audit.get_by_label("Action").select_option("grant")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#status")).to_have_text("1 audit row match.")
    rows = page.get_by_role("table", name="Audit rows, newest first").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("grant")
    audit.get_by_label("Action").select_option("")
    audit.get_by_label("Memory id").fill(p["memory_id"])
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(len(tenant.admin.get("/api/v1/audit", params={"memory_id": p["memory_id"]}).json()))
    for text in rows.all_inner_texts():
        assert p["memory_id"] in text
    assert not page.problems, page.problems


def test_audit_rows_are_one_line_and_page_back_by_actor(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    for n in range(7):
        tenant.member.post("/api/v1/memories", json={"content": f"note {n} with a longish detail", "kind": "note", "metadata": {"n": n}})
    tenant.admin.post("/api/v1/grants", json={"grantee_user_id": "bob", "scope": f"{tenant.id}/dept/ops", "ttl_seconds": 600, "reason": "on call"})
    alice = f"{tenant.id}/alice@brain"
    expected = [e["seq"] for e in tenant.admin.get("/api/v1/audit", params={"actor": alice}).json()]
    assert len(expected) == 7
    sign_in(page, service, tenant.admin_key)
    goto(page, "Audit log")
    table = page.get_by_role("table", name="Audit rows, newest first")
    rows = table.locator("tbody tr")
    expect(rows.first).to_be_visible()
    heights = [r["height"] for r in rows.evaluate_all("rs => rs.map(r => r.getBoundingClientRect())")]
    assert max(heights) < 60, f"an audit row is one line, not a column of JSON: {heights}"
    assert table.locator("td details").first.bounding_box()["width"] > 300, "the detail column is readable"
    screenshots.take(page, "audit-log")
    table.get_by_role("button", name=f"Only rows of {alice}").first.click()  # the actor filter, from a row
    audit = page.get_by_role("region", name="Audit log")
    expect(audit.get_by_label("Actor (tenant/user@agent)")).to_have_value(alice)
    audit.get_by_label("Rows per page").fill("3")
    page.get_by_role("button", name="Apply filters").click()
    seen: list[int] = []
    for _ in range(3):  # newest page, then two older ones: 3 + 3 + 1 rows
        expect(page.locator("#audit-position")).to_contain_text(f"page {len(seen) // 3 + 1}")
        seen += [int(t) for t in rows.locator("th").all_inner_texts()]
        if len(seen) < 7:
            page.get_by_role("button", name="Older rows").click()
    assert seen == expected, "paging back walks every row of the actor once, newest first"
    expect(page.get_by_role("button", name="Older rows")).to_be_disabled()
    page.get_by_role("button", name="Newer rows").click()
    expect(rows.locator("th")).to_have_text([str(s) for s in expected[3:6]])
    rows.first.locator("summary").click()  # the whole detail, on demand
    expect(rows.first.locator("pre")).to_contain_text('"session_id"')
    screenshots.take(page, "audit-log-actor-page-2", docs=False)
    assert not page.problems, page.problems


def test_scope_counts_show_every_scope_of_the_tenant(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    tenant.pending("Tabs, not spaces")
    tenant.member.post("/api/v1/memories", json={"content": "I like green tea", "kind": "preference"})
    sign_in(page, service, tenant.admin_key)
    goto(page, "Scopes")
    table = page.get_by_role("table", name="Memories per scope of your tenant")
    expect(table.locator("tbody tr").filter(has_text=f"{tenant.id}/dept/eng")).to_contain_text("department")
    texts = {t.split("\t")[0]: t for t in table.locator("tbody tr").all_inner_texts()}
    assert set(texts) == {f"{tenant.id}/dept/eng", f"{tenant.id}/user/alice"}, texts
    assert texts[f"{tenant.id}/dept/eng"].split("\t")[2:4] == ["0", "1"]  # active 0, pending 1
    screenshots.take(page, "scopes")
    table.get_by_role("button", name=f"Browse memories of {tenant.id}/user/alice").click()
    expect(page.get_by_role("link", name="Memories")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("table", name=f"Memories of {tenant.id}/user/alice")).to_contain_text("I like green tea")
    assert not page.problems, page.problems


def test_who_can_read_explains_a_memory(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    p = tenant.pending("Release notes go in CHANGES.md")
    tenant.admin.post(f"/api/v1/memories/{p['memory_id']}/approve", params={"scope": p["scope"]})
    grant = tenant.admin.post("/api/v1/grants", json={"grantee_user_id": "bob", "scope": p["scope"], "ttl_seconds": 600, "reason": "cross-team review"}).json()
    sign_in(page, service, tenant.admin_key)
    goto(page, "Who can read")
    readers = page.get_by_role("region", name="Who can read this memory, and why")
    readers.get_by_label("Scope", exact=True).fill(p["scope"])
    readers.get_by_label("Memory id").fill(p["memory_id"])
    readers.get_by_label("Memory id").press("Enter")
    table = page.get_by_role("table", name=f"Who can read {p['memory_id']}")
    expect(table.locator("tbody tr").filter(has_text="department eng")).to_contain_text("default scope")
    expect(table.locator("tbody tr").filter(has_text="user bob")).to_contain_text(grant["grant_id"])
    expect(page.locator("dl.facts")).to_contain_text("cross-tenant reads are never allowed")
    screenshots.take(page, "who-can-read")
    readers.get_by_label("Memory id").fill("no-such-memory")
    readers.get_by_label("Memory id").press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("404")
    expect(page.locator("#readers-out")).to_be_empty()  # not the previous memory's answer
    assert not [m for m in page.problems if "404" not in m], page.problems


def test_admin_of_tenant_b_cannot_see_tenant_a(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    a_pending = tenant.pending("Tenant A's confidential standard")
    other = Tenant(service)
    other.pending("Tenant B's own standard")
    sign_in(page, service, other.admin_key)
    expect(page.locator("#status")).to_have_text("1 pending memory awaiting approval.")
    expect(page.locator("#main")).not_to_contain_text("Tenant A's confidential standard")
    expect(page.locator("#main")).not_to_contain_text(a_pending["memory_id"])
    screenshots.take(page, "tenant-b-queue", docs=False)
    for name in ("Grants", "Manifests", "Audit log", "Scopes"):
        goto(page, name)
        expect(page.locator("#status")).not_to_be_empty()
        expect(page.locator("#main")).not_to_contain_text(tenant.id)
    goto(page, "Who can read")
    readers = page.get_by_role("region", name="Who can read this memory, and why")
    readers.get_by_label("Scope", exact=True).fill(a_pending["scope"])
    readers.get_by_label("Memory id").fill(a_pending["memory_id"])
    page.get_by_role("button", name="Explain").click()
    expect(page.get_by_role("alert")).to_contain_text("403")
    expect(page.locator("#readers-out")).to_be_empty()
    screenshots.take(page, "tenant-b-refused-a-memory", docs=False)
    # the same through the API: B's admin credential reaches nothing of A
    assert a_pending["memory_id"] not in other.admin.get("/api/v1/approvals").text
    assert other.admin.get(f"/api/v1/admin/memories/{a_pending['memory_id']}/readers", params={"scope": a_pending["scope"]}).status_code == 403
    assert other.admin.post(f"/api/v1/memories/{a_pending['memory_id']}/approve", params={"scope": a_pending["scope"]}).status_code == 403


def test_member_is_refused_the_admin_views(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    tenant.pending("A member's proposal")
    sign_in(page, service, tenant.member_key)
    expect(page.get_by_role("alert")).to_contain_text("403")
    expect(page.locator("#approvals-out")).to_be_empty()
    screenshots.take(page, "member-refused", docs=False)
    for name in ("Grants", "Manifests", "Scopes"):
        goto(page, name)
        expect(page.get_by_role("alert")).to_contain_text("403")
    for path in ("/api/v1/admin/grants", "/api/v1/admin/manifests", "/api/v1/admin/scopes", "/api/v1/approvals"):
        assert tenant.member.get(path).status_code == 403, path


def test_xss_payload_in_a_memory_renders_as_text(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    p = tenant.pending(XSS)
    sign_in(page, service, tenant.admin_key)
    cell = page.get_by_role("table", name="Pending memories awaiting your decision").locator("span.content")
    expect(cell).to_have_text(XSS)
    assert page.locator("#approvals-out img, #approvals-out script, #approvals-out svg").count() == 0
    assert page.evaluate("window.__pwned") is None
    goto(page, "Audit log")
    goto(page, "Approval queue")
    expect(cell).to_have_text(XSS)
    assert page.evaluate("window.__pwned") is None
    screenshots.take(page, "xss-as-text", docs=False)
    assert p["memory_id"]


def test_credential_is_kept_only_in_memory_unless_asked(page: Any, service: Service, tenant: Tenant) -> None:
    sign_in(page, service, tenant.admin_key)
    assert page.evaluate("JSON.stringify(Object.keys(sessionStorage)) + JSON.stringify(Object.keys(localStorage)) + document.cookie") == "[][]"
    page.reload()
    expect(page.get_by_label("API key or token")).to_be_visible()  # forgotten on reload
    sign_in(page, service, tenant.admin_key, remember=True)
    page.reload()
    expect(page.locator("#signed-in-as")).to_contain_text("Signed in as")
    page.get_by_role("button", name="Sign out").click()
    assert page.evaluate("sessionStorage.length") == 0


def test_console_is_served_with_a_strict_csp_and_no_data(service: Service) -> None:
    for path in ("/admin", "/admin/console.js", "/admin/console.css"):
        r = httpx.get(service.url + path)
        assert r.status_code == 200, path
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "require-trusted-types-for 'script'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
    html = httpx.get(service.url + "/admin").text
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "no inline script"
    assert not re.search(r"\son[a-z]+=", html) and "style=" not in html, "no inline handlers or styles"
    js = httpx.get(service.url + "/admin/console.js").text
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js
    assert httpx.get(service.url + "/api/v1/admin/whoami").status_code == 401  # the data needs a credential


def test_approver_works_the_queue_of_their_department_only(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    mine = tenant.pending("Eng standard: lint before commit")
    ops_member = service.client(service.api_key("olga", tenant=tenant.id, departments=["ops"]))
    theirs = ops_member.post("/api/v1/memories", json={"content": "Ops standard: page the on-call", "kind": "standard"}).json()
    approver_key = service.api_key("erin", tenant=tenant.id, departments=["eng"], roles=["approver"])
    sign_in(page, service, approver_key)
    expect(page.locator("#status")).to_have_text("1 pending memory awaiting approval.")
    expect(page.locator("#approvals-out")).not_to_contain_text(theirs["memory_id"])
    page.get_by_role("button", name=f"Approve memory {mine['memory_id']}").click()
    expect(page.locator("#status")).to_have_text(f"Approved memory {mine['memory_id']}.")
    screenshots.take(page, "approver-queue", docs=False)
    goto(page, "Grants")  # the tenant-wide views stay an admin's
    expect(page.get_by_role("alert")).to_contain_text("403")
    assert tenant.member.get(f"/api/v1/memories/{mine['memory_id']}", params={"scope": mine["scope"]}).json()["status"] == "active"


def test_admin_signs_in_with_a_bearer_token_and_follows_who_can_read_from_the_queue(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    p = tenant.pending("Token-holders see the same queue")
    token = service.token("root", tenant=tenant.id, roles=["admin"])
    page.goto(service.url + "/admin")
    page.get_by_label("Bearer token (JWT, sent as Authorization: Bearer)").check()
    page.get_by_label("API key or token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signed-in-as")).to_contain_text(f"Signed in as {tenant.id}/root@assistant (admin)")
    page.get_by_role("button", name=f"Who can read memory {p['memory_id']}").click()
    table = page.get_by_role("table", name=f"Who can read {p['memory_id']}")
    expect(table.locator("tbody tr").filter(has_text="its author, user alice")).to_contain_text("author")
    expect(page.get_by_role("link", name="Who can read")).to_have_attribute("aria-current", "page")
    screenshots.take(page, "who-can-read-pending", docs=False)
    assert not page.problems, page.problems


def test_a_long_queue_pages_with_load_more(page: Any, service: Service, tenant: Tenant) -> None:
    ids = {tenant.pending(f"standard number {n}")["memory_id"] for n in range(53)}
    sign_in(page, service, tenant.admin_key)
    expect(page.locator("#status")).to_have_text("50 pending memories awaiting approval (more remain: Load more).")
    page.get_by_role("button", name="Load more").click()
    expect(page.locator("#status")).to_have_text("Loaded 3 more; 53 pending memories shown.")
    expect(page.get_by_role("button", name="Load more")).to_be_hidden()
    shown = set(page.locator("#approvals-out tbody th").all_inner_texts())
    assert shown == ids


def test_admin_browses_and_searches_memories(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    for text in ("Release on Tuesdays", "Tea in the kitchen", "release notes in CHANGES.md", XSS):
        tenant.member.post("/api/v1/memories", json={"content": text, "kind": "note"})
    scope = f"{tenant.id}/user/alice"
    sign_in(page, service, tenant.admin_key)
    goto(page, "Memories")
    region = page.get_by_role("region", name="Browse and search memories")
    region.get_by_label("Scope").fill(scope)
    region.get_by_label("Content contains").fill("release")
    page.get_by_role("button", name="Search").click()
    table = page.get_by_role("table", name=f"Memories of {scope}")
    expect(table.locator("tbody tr")).to_have_count(2)
    assert sorted(table.locator("span.content").all_inner_texts()) == ["Release on Tuesdays", "release notes in CHANGES.md"]
    screenshots.take(page, "memories")
    region.get_by_label("Content contains").fill("")
    page.get_by_role("button", name="Search").click()
    expect(table.locator("tbody tr")).to_have_count(4)
    assert page.evaluate("window.__pwned") is None and page.locator("#memories-out img, #memories-out script").count() == 0
    first_id = table.locator("tbody th").first.inner_text()
    table.get_by_role("button", name=f"History of memory {first_id}").click()
    expect(page.get_by_role("region", name="Audit log").get_by_label("Memory id")).to_have_value(first_id)
    expect(page.get_by_role("table", name="Audit rows, newest first").locator("tbody tr").last).to_contain_text("write")  # its first row: the write
    assert tenant.member.get("/api/v1/admin/memories", params={"scope": scope}).status_code == 403
    assert not page.problems, page.problems


def test_admin_issues_and_revokes_an_api_key(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    sign_in(page, service, tenant.admin_key)
    goto(page, "API keys")
    region = page.get_by_role("region", name="API keys of your tenant")
    region.get_by_label("User id").fill("dora")
    region.get_by_label("Agent id").fill("ci")
    region.get_by_label("Departments (comma-separated)").fill("eng, ops")
    region.get_by_label("approver").check()
    region.get_by_label("Label").fill("the CI bot")
    page.get_by_role("button", name="Issue key").click()
    expect(page.locator("#status")).to_contain_text("copy it now")
    secret = page.get_by_label("The new API key").input_value()
    assert secret.startswith("vbk_")
    who = service.client(secret).get("/api/v1/admin/whoami").json()
    assert (who["principal"], who["roles"], who["department_ids"]) == (f"{tenant.id}/dora@ci", ["approver"], ["eng", "ops"])
    table = page.get_by_role("table", name="API keys of your tenant")
    row = table.locator("tbody tr").filter(has_text="the CI bot")
    expect(row).to_contain_text("approver")
    assert parse_api_key(secret)[1] not in table.inner_text(), "the listing never shows a secret"
    screenshots.take(page, "api-keys", mask=(page.get_by_label("The new API key"),))
    page.get_by_role("button", name="I have copied it").click()
    expect(page.get_by_label("The new API key")).to_have_count(0)
    key_id = parse_api_key(secret)[0]
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=f"Revoke key {key_id}").click()
    expect(page.locator("#status")).to_have_text(f"Revoked key {key_id}.")
    assert service.client(secret).get("/api/v1/admin/whoami").status_code == 401
    assert tenant.member.get("/api/v1/admin/keys").status_code == 403
    assert not page.problems, page.problems


def test_directory_shows_users_agents_and_teams(page: Any, service: Service, tenant: Tenant, screenshots: Screenshots) -> None:
    tenant.pending("a proposal, so alice has acted")
    tenant.admin.put("/api/v1/teams/red", json={"agent_ids": ["brain", "helper"]})
    sign_in(page, service, tenant.admin_key)
    goto(page, "Directory")
    users = page.get_by_role("table", name="Users and their agents")
    expect(users.locator("tbody tr").filter(has_text="alice")).to_contain_text("brain")
    expect(users.locator("tbody tr").filter(has_text="root")).to_contain_text("admin")
    expect(page.get_by_role("table", name="Teams").locator("tbody tr").filter(has_text="red")).to_contain_text("brain, helper")
    screenshots.take(page, "directory")
    users.get_by_role("button", name=f"Audit rows of {tenant.id}/alice@brain").click()
    expect(page.get_by_role("region", name="Audit log").get_by_label("Actor (tenant/user@agent)")).to_have_value(f"{tenant.id}/alice@brain")
    assert tenant.member.get("/api/v1/admin/directory").status_code == 403
    assert not page.problems, page.problems


def test_viewing_the_console_logs_no_recall(page: Any, service: Service, tenant: Tenant) -> None:
    p = tenant.pending("a pending standard")
    tenant.member.post("/api/v1/memories", json={"content": "a note", "kind": "note"})
    sign_in(page, service, tenant.admin_key)
    for name in ("Memories", "Scopes", "Grants", "Manifests", "Audit log", "API keys", "Directory", "Approval queue"):
        goto(page, name)
        expect(page.locator("#status")).not_to_be_empty()
    page.get_by_role("button", name=f"Who can read memory {p['memory_id']}").click()
    expect(page.get_by_role("table", name=f"Who can read {p['memory_id']}")).to_be_visible()
    rows = tenant.admin.get("/api/v1/audit", params={"actor": f"{tenant.id}/root@assistant", "limit": 1000}).json()
    assert [e for e in rows if e["action"] == "recall"] == [], "an admin's page views are no recall"
    assert {e["detail"].get("operation") for e in rows if e["action"] == "inspect"} >= {"pending", "who_can_read"}
