"""Multi-agent sharing, teams and task isolation (seed 000 sections 3, 5 and 6).

A private agent memory stays in its author's scope; `visible_to` adds named agents of the same
user as readers of exactly that memory (an exact-id ScopeSet entry every backend enforces in its
query); narrowing takes effect at the next query; a team scope is read and written by its member
agents only; an agent's working memory in one task is unseen by its other tasks.
"""

from __future__ import annotations

import uuid

import pytest

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput, NotPermitted
from contract_tests.harness import ContractEnv

pytestmark = pytest.mark.asyncio

BIG = 20000
SECRET = "Wukong's scouting note: the cave entrance is behind the waterfall on the east ridge"
WITHHELD = "Wukong's scouting note: the second cave entrance is hidden under the pine on the west ridge"
TEAM_TEXT = "Pilgrim team decision: we cross the Flaming Mountain only after borrowing the palm-leaf fan"
TASK_TEXT = "Working note for the river crossing task: the raft needs four more bamboo poles"
MODES = ({}, {"purpose": "coding"}, {"kinds": ["note"]}, {"kinds": ["note", "fact"], "purpose": "coding"})


async def _shared(env: ContractEnv):
    ids, bridge = env.ids, env.bridge
    wukong = await ids.login("alice", agent="wukong")
    bajie = await ids.login("alice", agent="bajie")
    shared = await bridge.remember(wukong, SECRET, "note", memory_type="private", visible_to=["wukong", "bajie"])
    withheld = await bridge.remember(wukong, WITHHELD, "note", memory_type="private")
    assert shared.scope == withheld.scope == "acme/agent/wukong/alice", f"a private agent memory stays in its author's scope, got {shared.scope}"
    assert shared.memory_type == "private" and shared.visible_to == ("wukong", "bajie"), shared
    assert withheld.visible_to == ("wukong",), withheld
    return wukong, bajie, shared, withheld


async def test_memory_visible_to_a_and_b_is_never_returned_to_c(contract: ContractEnv) -> None:
    """Seed 000 section 3: a memory visible_to [wukong, bajie] reaches bajie (exactly that memory,
    labelled) and never a third agent of the same user, nor the same agent id of another user or
    tenant — in any search mode, by list or by get."""
    bridge, ids = contract.bridge, contract.ids
    wukong, bajie, shared, withheld = await _shared(contract)
    guarantee = "a memory visible_to [A, B] is never returned to C"

    seen = await contract.recall(bajie, SECRET, must_see=[shared.memory_id], budget_tokens=BIG)
    contract.assert_not_seen(seen, [withheld], guarantee="a share makes exactly the shared memory readable, nothing else of the author's scope", reader=bajie)
    (item,) = [i for i in seen.items if i.memory_id == shared.memory_id]
    assert item.memory_type == "private" and item.visible_to == ("wukong", "bajie") and item.author == "alice@wukong", item
    await contract.recall(wukong, SECRET, must_see=[shared.memory_id, withheld.memory_id], budget_tokens=BIG)
    assert (await bridge.get_memory(bajie, shared.ref)).content == SECRET  # by reference too, for the audience
    with pytest.raises(NotPermitted):  # ... exactly the shared memory
        await bridge.get_memory(bajie, withheld.ref)
    with pytest.raises(NotPermitted):  # and no listing of the author's scope
        await bridge.list_memories(bajie, shared.scope)

    others = [
        await ids.login("alice", agent="tangseng"),
        await ids.login("bob", agent="bajie"),
        await ids.login("alice", tenant="globex", agent="bajie"),
    ]
    for reader in others:
        sentinel = await bridge.remember(reader, SECRET + f" (as noted by {reader.principal})", "note", memory_type="private")
        for mode in MODES:
            result = await contract.recall(reader, SECRET, must_see=[sentinel.memory_id] if "kinds" not in mode or "note" in mode["kinds"] else [], budget_tokens=BIG, **mode)
            contract.assert_not_seen(result, [shared, withheld], guarantee=f"{guarantee} ({mode or 'default recall'})", reader=reader)
        with pytest.raises(NotPermitted):
            await bridge.get_memory(reader, shared.ref)
        with pytest.raises(NotPermitted):
            await bridge.list_memories(reader, shared.scope)


async def test_narrowing_visible_to_hides_it_at_once(contract: ContractEnv) -> None:
    """Seed 000 section 3: narrowing visible_to takes effect at the next query (the
    memory never moved, the share record changed); widening again restores it."""
    bridge = contract.bridge
    wukong, bajie, shared, _ = await _shared(contract)
    await contract.recall(bajie, SECRET, must_see=[shared.memory_id], budget_tokens=BIG)

    narrowed = await bridge.set_visible_to(wukong, shared.ref, ["wukong"])
    assert narrowed.visible_to == ("wukong",), narrowed
    for mode in MODES:
        result = await bridge.recall(bajie, SECRET, budget_tokens=BIG, **mode)
        contract.assert_not_seen(result, [shared], guarantee="narrowing visible_to hides the memory at once", reader=bajie)
    mine = await contract.recall(wukong, SECRET, must_see=[shared.memory_id], budget_tokens=BIG)
    (item,) = [i for i in mine.items if i.memory_id == shared.memory_id]
    assert item.visible_to == ("wukong",), item

    await bridge.set_visible_to(wukong, shared.ref, ["*"])
    await contract.recall(bajie, SECRET, must_see=[shared.memory_id], budget_tokens=BIG)
    events = await bridge.audit_events(wukong, action="share", memory_id=shared.memory_id)
    assert len(events) >= 3, f"every change of visible_to is audited, got {events}"


async def test_only_the_owner_or_an_admin_changes_visible_to(contract: ContractEnv) -> None:
    """A non-owner agent (even one in the audience) cannot widen or narrow another
    agent's memory; the refusal is audited; a tenant admin can."""
    bridge, ids = contract.bridge, contract.ids
    wukong, bajie, shared, withheld = await _shared(contract)
    for attacker in (bajie, await ids.login("alice", agent="tangseng"), await ids.login("bob", agent="wukong")):
        with pytest.raises(NotPermitted):
            await bridge.set_visible_to(attacker, withheld.ref, ["*"])
    denied = await bridge.audit_events(await ids.login("root", roles=["admin"]), action="denied")
    assert any(e.detail.get("operation") == "set_visible_to" for e in denied), "a refused visible_to change is audited"
    admin = await ids.login("root", roles=["admin"])
    await bridge.set_visible_to(admin, withheld.ref, ["bajie"])
    await contract.recall(bajie, WITHHELD, must_see=[withheld.memory_id], budget_tokens=BIG)


async def test_tenant_b_admin_cannot_change_tenant_a_shares_or_teams(contract: ContractEnv) -> None:
    """An admin of tenant B can neither change visible_to of a tenant-A memory nor make
    its agents members of a tenant-A team (team operations act in the admin's own tenant only)."""
    bridge, ids = contract.bridge, contract.ids
    wukong, bajie, shared, withheld = await _shared(contract)
    acme_admin = await ids.login("root", roles=["admin"])
    await bridge.set_team_members(acme_admin, "pilgrims", ["wukong"])
    team_note = await bridge.remember(wukong, TEAM_TEXT, "decision", memory_type="team", team_id="pilgrims")

    evil = await ids.login("mallory", tenant="globex", agent="bajie", roles=["admin"])
    with pytest.raises(NotPermitted):
        await bridge.set_visible_to(evil, withheld.ref, ["*"])
    changed = await bridge.set_team_members(evil, "pilgrims", ["bajie", "wukong"])
    assert changed.members == ("bajie", "wukong")  # globex's own team of that name
    globex_wukong = await ids.login("mallory", tenant="globex", agent="wukong")
    for reader in (evil, globex_wukong):
        for mode in MODES:
            result = await bridge.recall(reader, TEAM_TEXT + " " + WITHHELD, budget_tokens=BIG, **mode)
            contract.assert_not_seen(result, [team_note, withheld, shared], guarantee="another tenant's admin cannot reach tenant A's shares or teams", reader=reader)
    result = await bridge.recall(bajie, WITHHELD, budget_tokens=BIG)
    contract.assert_not_seen(result, [withheld], guarantee="a refused visible_to change leaves the audience as it was", reader=bajie)
    with pytest.raises(NotPermitted):
        await bridge.remember(bajie, "Bajie was never a pilgrim", "decision", memory_type="team", team_id="pilgrims")


async def test_non_member_cannot_write_team_memory(contract: ContractEnv) -> None:
    """Seed 000 section 5: only members write team memory; the refusal is audited as denied."""
    bridge, ids = contract.bridge, contract.ids
    admin = await ids.login("root", roles=["admin"])
    await bridge.set_team_members(admin, "pilgrims", ["wukong", "bajie"])
    wukong = await ids.login("alice", agent="wukong")
    stored = await bridge.remember(wukong, TEAM_TEXT, "decision", memory_type="team", team_id="pilgrims")
    assert stored.scope == "acme/team/pilgrims" and stored.memory_type == "team" and stored.visible_to == ("*",), stored

    outsider = await ids.login("alice", agent="tangseng")
    for kwargs in ({"memory_type": "team", "team_id": "pilgrims"}, {"team_id": "pilgrims"}, {"visibility": "team"}, {"memory_type": "team"}):
        with pytest.raises(NotPermitted):
            await bridge.remember(outsider, "Tangseng rewrites the team plan", "decision", **kwargs)
    with pytest.raises(NotPermitted):  # a member of one team cannot write another team
        await bridge.remember(wukong, "Wukong writes the demons' plan", "decision", memory_type="team", team_id="demons")
    denied = await bridge.audit_events(admin, action="denied")
    assert sum(1 for e in denied if e.detail.get("operation") == "remember") >= 5, "refused team writes are audited"
    listed = await bridge.list_memories(wukong, "acme/team/pilgrims")  # a member lists its team
    assert [m.memory_id for m in listed.memories] == [stored.memory_id], "nothing a non-member tried was written"

    await bridge.remove_team_member(admin, "pilgrims", "wukong")
    with pytest.raises(NotPermitted):  # membership is read at every write: removal is immediate
        await bridge.remember(wukong, "Wukong after leaving", "decision", memory_type="team", team_id="pilgrims")


async def test_non_member_cannot_read_team_memory(contract: ContractEnv) -> None:
    """Seed 000 section 5: team memory reaches every member agent and no other agent — in any
    search mode, by list or by get — and a removed member stops seeing it at once."""
    bridge, ids = contract.bridge, contract.ids
    admin = await ids.login("root", roles=["admin"])
    await bridge.set_team_members(admin, "pilgrims", ["wukong", "bajie"])
    wukong = await ids.login("alice", agent="wukong")
    stored = await bridge.remember(wukong, TEAM_TEXT, "decision", memory_type="team", team_id="pilgrims")
    bajie = await ids.login("bob", agent="bajie")
    seen = await contract.recall(bajie, TEAM_TEXT, must_see=[stored.memory_id], budget_tokens=BIG)
    (item,) = [i for i in seen.items if i.memory_id == stored.memory_id]
    assert item.memory_type == "team" and item.visible_to == ("*",) and "team pilgrims" in item.why_visible, item

    outsiders = [await ids.login("alice", agent="tangseng"), await ids.login("alice", tenant="globex", agent="wukong")]
    for reader in outsiders:
        for mode in MODES + ({"kinds": ["decision"]},):
            result = await bridge.recall(reader, TEAM_TEXT, budget_tokens=BIG, **mode)
            contract.assert_not_seen(result, [stored], guarantee=f"a non-member cannot read team memory ({mode or 'default recall'})", reader=reader)
        with pytest.raises(NotPermitted):
            await bridge.get_memory(reader, stored.ref)
        with pytest.raises(NotPermitted):
            await bridge.list_memories(reader, stored.scope)

    await bridge.remove_team_member(admin, "pilgrims", "bajie")
    result = await bridge.recall(bajie, TEAM_TEXT, budget_tokens=BIG)
    contract.assert_not_seen(result, [stored], guarantee="a removed member stops reading team memory at once", reader=bajie)


async def test_task_working_memory_is_invisible_to_the_agents_other_tasks(contract: ContractEnv) -> None:
    """Seed 000 section 6, isolation level 3: with a task_id from the credential, an agent's
    working memory lands in that task's scope; the same agent in another task, or without a
    task, never sees it; the task itself does."""
    bridge, ids = contract.bridge, contract.ids

    async def in_task(task: str | None):
        return await ids.via_gateway("alice", session_id=f"s{uuid.uuid4().hex[:12]}", agent="coder", task_id=task)

    river = await in_task("river")
    stored = await bridge.remember(river, TASK_TEXT, "procedure")
    assert stored.scope == "acme/task/coder/alice/river" and stored.memory_type == "private", stored
    private = await bridge.remember(river, TASK_TEXT + " (shared with the pilgrims)", "note", memory_type="private")
    assert private.scope == "acme/task/coder/alice/river", private
    await contract.recall(await in_task("river"), TASK_TEXT, must_see=[stored.memory_id, private.memory_id], budget_tokens=BIG)

    long_term = await bridge.remember(await in_task(None), TASK_TEXT + " (long-term agent memory)", "procedure")
    assert long_term.scope == "acme/agent/coder/alice", "without a task_id nothing changes for existing callers"
    for reader in (await in_task("mountain"), await in_task(None), await ids.login("alice", agent="coder")):
        for mode in MODES + ({"kinds": ["procedure"]},):
            result = await bridge.recall(reader, TASK_TEXT, budget_tokens=BIG, **mode)
            contract.assert_not_seen(result, [stored, private], guarantee=f"another task of the same agent never sees a task's working memory ({mode or 'default'})", reader=reader)
        with pytest.raises(NotPermitted):
            await bridge.get_memory(reader, stored.ref)
    other = await in_task("mountain")
    await contract.recall(other, TASK_TEXT, must_see=[long_term.memory_id], budget_tokens=BIG)  # the agent's own memory stays readable
    assert ScopeKey.parse(stored.scope).task_id == "river"


NARROW_TEXT = "Pilgrim team decision: the project uses the Next.js App Router for every page"


async def test_team_memory_narrowed_by_visible_to_reaches_only_the_listed_members(contract: ContractEnv) -> None:
    """Seed 000 3.3: team memory written with an explicit visible_to is read by the listed
    agents and its author only — never by another member of the team (in any search mode, by
    get or by list), never by the team's own scope; it is labelled team with visible_to as given
    (plus the author), and forgetting it ends every reader's view."""
    bridge, ids = contract.bridge, contract.ids
    admin = await ids.login("root", roles=["admin"])
    await bridge.set_team_members(admin, "pilgrims", ["maomao", "wukong", "bajie", "shaseng"])
    maomao = await ids.login("alice", agent="maomao")
    stored = await bridge.remember(maomao, NARROW_TEXT, "decision", memory_type="team", visible_to=["wukong", "bajie"])
    assert stored.memory_type == "team" and stored.visible_to == ("bajie", "maomao", "wukong"), stored
    assert stored.scope != "acme/team/pilgrims", "narrowed team memory must not land where every member reads"
    whole = await bridge.remember(maomao, NARROW_TEXT + " (whole team)", "decision", memory_type="team", team_id="pilgrims")

    readers = [await ids.login("alice", agent="wukong"), await ids.login("bob", agent="bajie"), maomao]
    for reader in readers:
        seen = await contract.recall(reader, NARROW_TEXT, must_see=[stored.memory_id, whole.memory_id], budget_tokens=BIG)
        (item,) = [i for i in seen.items if i.memory_id == stored.memory_id]
        assert item.memory_type == "team" and item.visible_to == ("bajie", "maomao", "wukong"), item
        assert (await bridge.get_memory(reader, stored.ref)).content == NARROW_TEXT

    shaseng = await ids.login("alice", agent="shaseng")  # a member of the team, not listed
    outsiders = [shaseng, await ids.login("alice", agent="tangseng"), await ids.login("alice", tenant="globex", agent="wukong")]
    for reader in outsiders:
        for mode in MODES + ({"kinds": ["decision"]},):
            result = await bridge.recall(reader, NARROW_TEXT, budget_tokens=BIG, **mode)
            contract.assert_not_seen(result, [stored], guarantee=f"narrowed team memory reaches only visible_to ({mode or 'default'})", reader=reader)
        with pytest.raises(NotPermitted):
            await bridge.get_memory(reader, stored.ref)
        with pytest.raises(NotPermitted):
            await bridge.list_memories(reader, stored.scope)
    await contract.recall(shaseng, NARROW_TEXT, must_see=[whole.memory_id], budget_tokens=BIG)  # still a member of the team
    listed = await bridge.list_memories(shaseng, "acme/team/pilgrims")
    assert stored.memory_id not in [m.memory_id for m in listed.memories]

    with pytest.raises(InvalidInput):  # narrowing never widens: a non-member cannot be listed
        await bridge.remember(maomao, NARROW_TEXT + " (for a stranger)", "decision", memory_type="team", visible_to=["tangseng"])
    with pytest.raises(InvalidInput):  # nobody can create a team that would read the narrowed place in full
        await bridge.set_team_members(admin, ScopeKey.parse(stored.scope).owner_id, ["shaseng"])

    await bridge.remove_team_member(admin, "pilgrims", "wukong")  # membership is read at every recall
    result = await bridge.recall(readers[0], NARROW_TEXT, budget_tokens=BIG)
    contract.assert_not_seen(result, [stored], guarantee="a listed agent removed from the team stops reading it", reader=readers[0])

    assert await bridge.forget(admin, stored.ref)
    for reader in readers[1:]:
        result = await bridge.recall(reader, NARROW_TEXT, budget_tokens=BIG)
        contract.assert_not_seen(result, [stored], guarantee="a forgotten narrowed team memory is gone for every reader", reader=reader)

    erased = await bridge.remember(maomao, NARROW_TEXT + " (before the erasure)", "decision", memory_type="team", visible_to=["bajie"])
    await bridge.forget_subject(admin, "alice")  # erasure of the author removes it and its audience
    result = await bridge.recall(readers[1], NARROW_TEXT, budget_tokens=BIG)
    contract.assert_not_seen(result, [erased], guarantee="an erased author's narrowed team memory is gone for every reader", reader=readers[1])
