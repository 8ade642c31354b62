"""The console's newer operations at the library level: browsing a scope, the tenant directory,
API-key management, and administrative views audited as `inspect`, never as `recall`."""

from __future__ import annotations

import asyncio

import pytest

from bridge.errors import ConfigurationError, InvalidInput, NotFound, NotPermitted
from bridge.operations import PendingApprovals
from bridge.operations.admin import BrowseMemories, TenantDirectory, WhoCanRead
from bridge.operations.keys import IssueApiKey, ListApiKeys, RevokeApiKey
from bridge.operations.sharing import SetTeamMembers
from identity.errors import InvalidCredential
from identity.providers.api_keys import ApiKeyStore, parse_api_key
from tests.kit import make_identity

ADMIN = make_identity("root", roles=["admin"])
OTHER_ADMIN = make_identity("boss", tenant="globex", roles=["admin"])
MEMBER = make_identity("alice")


@pytest.fixture
def keys(bridge):  # type: ignore[no-untyped-def]
    store = ApiKeyStore.in_memory()
    bridge.runtime.api_keys = store
    yield store
    store.close()


async def test_console_views_are_inspect_rows_not_recalls(bridge) -> None:  # type: ignore[no-untyped-def]
    w = await bridge.remember(MEMBER, "deploys need a ticket", "standard")
    assert w.status == "pending"
    await bridge.execute(ADMIN, PendingApprovals())
    await bridge.execute(ADMIN, WhoCanRead(ref=(w.scope, w.memory_id)))
    await bridge.execute(ADMIN, BrowseMemories(scope=w.scope))
    assert await bridge.audit_events(ADMIN, action="recall") == [], "an admin's page views are no recall"
    looked = await bridge.audit_events(ADMIN, action="inspect", memory_id=w.memory_id)
    assert sorted(r.detail["operation"] for r in looked) == ["browse", "pending", "who_can_read"]
    assert all(r.actor == ADMIN.principal for r in looked)


async def test_browse_a_scope_by_status_and_text(bridge) -> None:  # type: ignore[no-untyped-def]
    notes = [await bridge.remember(MEMBER, text, "note") for text in ("Tea at four", "coffee at nine", "TEA again", "water")]
    scope = notes[0].scope
    page = await bridge.execute(ADMIN, BrowseMemories(scope=scope, text="tea"))
    assert sorted(m.content for m in page.memories) == ["TEA again", "Tea at four"]
    assert {m.memory_id for m in (await bridge.execute(ADMIN, BrowseMemories(scope=scope))).memories} == {n.memory_id for n in notes}
    walked, cursor = [], None
    while True:
        page = await bridge.execute(ADMIN, BrowseMemories(scope=scope, limit=3, cursor=cursor))
        walked += [m.memory_id for m in page.memories]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(walked) == sorted(n.memory_id for n in notes)
    assert (await bridge.execute(ADMIN, BrowseMemories(scope=scope, status="pending"))).memories == ()
    with pytest.raises(InvalidInput):
        BrowseMemories(scope=scope, status="forgotten")


async def test_only_a_tenant_admin_browses_and_only_their_tenant(bridge) -> None:  # type: ignore[no-untyped-def]
    w = await bridge.remember(MEMBER, "secret plan", "note")
    for who in (MEMBER, OTHER_ADMIN):
        with pytest.raises(NotPermitted):
            await bridge.execute(who, BrowseMemories(scope=w.scope))
    with pytest.raises(NotPermitted):
        await bridge.execute(MEMBER, TenantDirectory())


async def test_directory_lists_users_agents_and_teams(bridge, keys) -> None:  # type: ignore[no-untyped-def]
    keys.issue(tenant_id="acme", user_id="carol", agent_id="planner", department_ids=["ops"], roles=["approver"])
    keys.issue(tenant_id="globex", user_id="gina", agent_id="coder")
    await bridge.remember(MEMBER, "a note", "note")
    await bridge.execute(ADMIN, SetTeamMembers(team_id="red", agent_ids=["assistant", "planner"]))
    d = await bridge.execute(ADMIN, TenantDirectory())
    users = {u.user_id: u for u in d.users}
    assert set(users) == {"alice", "carol", "root"}, "keys and audit actors of this tenant only"
    assert users["carol"].roles == ("approver",) and users["carol"].active_keys == 1 and users["carol"].last_seen is None
    assert users["alice"].agents == ("assistant",) and users["alice"].last_seen is not None
    assert [(t.team_id, t.members) for t in d.teams] == [("red", ("assistant", "planner"))]


async def test_keys_listed_issued_and_revoked_for_the_admins_tenant_only(bridge, keys) -> None:  # type: ignore[no-untyped-def]
    theirs = keys.issue(tenant_id="globex", user_id="gina", agent_id="coder")
    issued = await bridge.execute(ADMIN, IssueApiKey(user_id="dave", agent_id="ci", department_ids=("eng",), roles=("approver",), label="ci bot"))
    assert issued.key.startswith("vbk_") and keys.verify(issued.key).tenant_id == "acme"
    listed = await bridge.execute(ADMIN, ListApiKeys())
    assert [k.key_id for k in listed] == [issued.record.key_id], "never another tenant's keys"
    assert "key" not in listed[0].model_dump(), "a listing carries no secret"
    with pytest.raises(NotFound):
        await bridge.execute(ADMIN, RevokeApiKey(key_id=theirs.record.key_id))
    assert keys.verify(theirs.key)  # untouched
    assert await bridge.execute(ADMIN, RevokeApiKey(key_id=issued.record.key_id)) is True
    with pytest.raises(InvalidCredential):
        keys.verify(issued.key)
    assert await bridge.execute(ADMIN, ListApiKeys()) == []
    assert [k.revoked_at is not None for k in await bridge.execute(ADMIN, ListApiKeys(include_revoked=True))] == [True]
    rows = await bridge.audit_events(ADMIN, action="api_key")
    assert sorted(r.detail["operation"] for r in rows) == ["issue", "revoke"]
    assert parse_api_key(issued.key)[1] not in str([r.detail for r in rows]), "the secret is on no audit row"


async def test_keys_refuse_members_unknown_roles_wider_roles_and_whole_keys(bridge, keys) -> None:  # type: ignore[no-untyped-def]
    for op in (ListApiKeys(), IssueApiKey(user_id="x"), RevokeApiKey(key_id="0" * 16)):
        with pytest.raises(NotPermitted):
            await bridge.execute(MEMBER, op)
    with pytest.raises(InvalidInput, match="the roles are: admin, approver, global_admin"):
        IssueApiKey(user_id="x", roles=("superuser",))
    with pytest.raises(NotPermitted):  # an admin cannot mint a key wider than themselves
        await bridge.execute(ADMIN, IssueApiKey(user_id="x", roles=("global_admin",)))
    whole = keys.issue(tenant_id="acme", user_id="x", agent_id="a").key
    with pytest.raises(InvalidInput) as refused:
        RevokeApiKey(key_id=whole)
    assert parse_api_key(whole)[1] not in str(refused.value), "a whole key is never echoed"


async def test_key_management_without_a_key_store_says_why(bridge) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError, match="authenticates no API keys"):
        await bridge.execute(ADMIN, ListApiKeys())


async def test_key_management_reaches_the_store_off_the_event_loop(bridge, keys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The key store blocks (a synced SQLite write, PostgreSQL round trips): listing, issuing,
    revoking keys and the tenant directory call it from a worker thread, never from the thread
    running the loop, which serves every other request meanwhile."""
    on_loop: list[str] = []
    for name in ("insert", "lookup", "revoke", "records"):
        original = getattr(keys.repository, name)

        def watched(*args, _name=name, _original=original, **kwargs):  # type: ignore[no-untyped-def]
            if asyncio._get_running_loop() is not None:
                on_loop.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(keys.repository, name, watched)
    issued = await bridge.execute(ADMIN, IssueApiKey(user_id="dave", agent_id="ci"))
    assert [k.key_id for k in await bridge.execute(ADMIN, ListApiKeys())] == [issued.record.key_id]
    assert "dave" in {u.user_id for u in (await bridge.execute(ADMIN, TenantDirectory())).users}
    assert await bridge.execute(ADMIN, RevokeApiKey(key_id=issued.record.key_id)) is True
    assert on_loop == []
