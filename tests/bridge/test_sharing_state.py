"""The share and team repositories (bridge/state/{memory,sqlite/sharing}.py): the in-process and SQLite stores
keep exactly what was stored, a narrowing is visible to the next read, a reader's lookup stays
inside its tenant and user, and it is an indexed query (no scan of every share).
tests/postgres/test_sharing_state_pg.py re-runs the same assertions on PostgreSQL."""

from __future__ import annotations

import pytest

from adapters.scopes import ScopeKey
from bridge.state.memory import MemoryState
from bridge.state.sqlite import SqliteState
from bridge.state.sqlite.sharing import _TEAMS_PROBE, _shared_with_probes
from bridge.roles.teams import TeamMembership, apply_team_membership
from bridge.errors import InvalidInput

WUKONG = ScopeKey.agent("acme", "wukong", "alice")
TASK = ScopeKey.task("acme", "wukong", "alice", "river")


@pytest.fixture(params=["sqlite", "memory"])
async def state(request, tmp_path):
    s = SqliteState(tmp_path / "bridge.sqlite3") if request.param == "sqlite" else MemoryState()
    yield s
    await s.aclose()


async def test_a_share_reaches_exactly_its_audience_of_the_same_user(state):
    await state.shares.set_audience(WUKONG, "m1", frozenset({"bajie", "sha"}), 1.0)
    await state.shares.set_audience(WUKONG, "m2", frozenset({"*"}), 1.0)
    await state.shares.set_audience(TASK, "m3", frozenset({"bajie"}), 1.0)
    await state.shares.set_audience(ScopeKey.agent("acme", "wukong", "bob"), "m4", frozenset({"bajie"}), 1.0)
    await state.shares.set_audience(ScopeKey.agent("globex", "wukong", "alice"), "m5", frozenset({"bajie"}), 1.0)
    assert await state.shares.shared_with("acme", "alice", "bajie") == {WUKONG: frozenset({"m1", "m2"}), TASK: frozenset({"m3"})}
    assert await state.shares.shared_with("acme", "alice", "tangseng") == {WUKONG: frozenset({"m2"})}
    assert await state.shares.shared_with("acme", "bob", "tangseng") == {}
    assert await state.shares.shared_with("globex", "alice", "bajie") == {ScopeKey.agent("globex", "wukong", "alice"): frozenset({"m5"})}
    assert await state.shares.audience_of(WUKONG, ["m1", "m2", "nope"]) == {"m1": frozenset({"bajie", "sha"}), "m2": frozenset({"*"})}


async def test_a_narrowed_team_share_reaches_its_agents_acting_for_any_user_of_the_tenant(state):
    """A narrowed team place has no owning user: its share rows carry the any-user mark, and the
    reader's lookup (user or any user, agent or every agent) finds them for every user of the
    tenant, for exactly the listed agents, never across tenants."""
    from bridge.policy.sharing import narrowed_team

    place = narrowed_team("acme", "red")
    await state.shares.set_audience(place, "n1", frozenset({"bajie", "wukong"}), 1.0)
    await state.shares.set_audience(place, "n2", frozenset({"*"}), 1.0)
    await state.shares.set_audience(WUKONG, "m1", frozenset({"bajie"}), 1.0)
    assert await state.shares.shared_with("acme", "alice", "bajie") == {place: frozenset({"n1", "n2"}), WUKONG: frozenset({"m1"})}
    assert await state.shares.shared_with("acme", "bob", "bajie") == {place: frozenset({"n1", "n2"})}
    assert await state.shares.shared_with("acme", "bob", "sha") == {place: frozenset({"n2"})}
    assert await state.shares.shared_with("globex", "bob", "bajie") == {}


async def test_narrowing_a_share_is_visible_to_the_next_read(state):
    await state.shares.set_audience(WUKONG, "m1", frozenset({"bajie", "sha"}), 1.0)
    await state.shares.set_audience(WUKONG, "m1", frozenset({"sha"}), 2.0)
    assert await state.shares.shared_with("acme", "alice", "bajie") == {}
    assert await state.shares.audience_of(WUKONG, ["m1"]) == {"m1": frozenset({"sha"})}
    await state.shares.set_audience(WUKONG, "m1", frozenset(), 3.0)
    assert await state.shares.shared_with("acme", "alice", "sha") == {}
    assert await state.shares.audience_of(WUKONG, ["m1"]) == {}


async def test_a_forgotten_or_erased_memory_loses_its_share(state):
    await state.shares.set_audience(WUKONG, "m1", frozenset({"bajie"}), 1.0)
    await state.shares.set_audience(WUKONG, "m2", frozenset({"bajie"}), 1.0)
    await state.shares.set_audience(ScopeKey.agent("acme", "wukong", "bob"), "m3", frozenset({"bajie"}), 1.0)
    assert await state.shares.purge_memory_ids({"m1"}) == 1
    assert await state.shares.shared_with("acme", "alice", "bajie") == {WUKONG: frozenset({"m2"})}
    assert await state.shares.purge_user("acme", "alice") == 1
    assert await state.shares.shared_with("acme", "alice", "bajie") == {}
    assert await state.shares.shared_with("acme", "bob", "bajie") != {}


async def test_team_membership_is_per_tenant_and_replaced_whole(state):
    await state.teams.set_members("acme", "red", frozenset({"wukong", "bajie"}))
    await state.teams.set_members("globex", "red", frozenset({"mallory"}))
    assert await state.teams.teams_of("acme", "wukong") == {"red"}
    assert await state.teams.teams_of("acme", "mallory") == frozenset()
    assert await state.teams.members("globex", "red") == {"mallory"}
    assert await state.teams.add_member("acme", "red", "sha") is True
    assert await state.teams.add_member("acme", "red", "sha") is False
    assert await state.teams.remove_member("acme", "red", "wukong") is True
    assert await state.teams.members("acme", "red") == {"bajie", "sha"}
    assert await state.teams.knows_agent("acme", "sha") and not await state.teams.knows_agent("acme", "wukong")
    await state.teams.set_members("acme", "red", frozenset())
    assert not await state.teams.has_teams("acme") and await state.teams.has_teams("globex")


async def test_apply_team_membership_loads_role_file_data_and_refuses_bad_ids(state):
    loaded = await apply_team_membership(state, "acme", {"pilgrims": ["wukong", "bajie"], "demons": ("baigu",)})
    assert loaded.teams == {"pilgrims": frozenset({"wukong", "bajie"}), "demons": frozenset({"baigu"})}
    assert await state.teams.teams_of("acme", "bajie") == {"pilgrims"}
    await apply_team_membership(state, "acme", TeamMembership.of({"pilgrims": ["bajie"]}))
    assert await state.teams.members("acme", "pilgrims") == {"bajie"} and await state.teams.members("acme", "demons") == {"baigu"}
    for bad in ({"pilgrims": ["wu/kong"]}, {"pi lgrims": ["wukong"]}, {"pilgrims": "wukong"}, ["pilgrims"], {"pilgrims": ["*"]}):
        with pytest.raises(InvalidInput):
            await apply_team_membership(state, "acme", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        await apply_team_membership(state, "ac/me", {"pilgrims": ["wukong"]})
    assert await state.teams.members("acme", "pilgrims") == {"bajie"}


async def test_for_reader_is_shared_with_and_teams_of_in_one_answer(state):
    """The recall's one sharing read answers exactly what the two lookups answer, for readers of
    every kind (own user, another user, another tenant, every-agent and any-user rows, an agent
    in several teams or none), over random shares and memberships."""
    import random

    from bridge.policy.sharing import narrowed_team

    rng = random.Random(7)
    tenants, users, agents = ("acme", "globex"), ("alice", "bob"), ("wukong", "bajie", "sha")
    places = [ScopeKey.agent(t, a, u) for t in tenants for a in agents for u in users] + [narrowed_team(t, "red") for t in tenants]
    for n in range(40):
        audience = frozenset(rng.sample([*agents, "*"], rng.randint(0, 2)))
        await state.shares.set_audience(rng.choice(places), f"m{n % 17}", audience, float(n))
    for tenant in tenants:
        for team in ("red", "blue", "green"):
            await state.teams.set_members(tenant, team, frozenset(rng.sample(agents, rng.randint(0, 3))))
    for tenant in (*tenants, "initech"):
        for user in (*users, "carol"):
            for agent in (*agents, "mallory"):
                reach = await state.shares.for_reader(tenant, user, agent)
                assert reach.shared == await state.shares.shared_with(tenant, user, agent), (tenant, user, agent)
                assert reach.teams == await state.teams.teams_of(tenant, agent), (tenant, user, agent)


async def test_the_sqlite_readers_lookup_answers_what_the_in_process_state_answers(tmp_path):
    """The SQLite reader lookup (its probes' text built once per number of distinct pairs, their
    parameters written out) against the in-process state on the same random shares, narrowings
    and memberships: the same memories and teams for every reader, at every step."""
    import random

    from bridge.policy.sharing import narrowed_team

    rng = random.Random(11)
    tenants, users, agents = ("acme", "globex"), ("alice", "bob"), ("wukong", "bajie", "sha")
    # a narrowed team's place (no single user: its rows are the any-user ones) drawn as often as all agent places together
    places = [ScopeKey.agent(t, a, u) for t in tenants for a in agents for u in users] + [narrowed_team(t, "red") for t in tenants] * 6
    sqlite, memory = SqliteState(tmp_path / "bridge.sqlite3"), MemoryState()
    try:
        for n in range(80):
            if n % 5 == 4:
                tenant, team = rng.choice(tenants), rng.choice(("red", "blue"))
                members = frozenset(rng.sample(agents, rng.randint(0, 3)))
                for s in (sqlite, memory):
                    await s.teams.set_members(tenant, team, members)
            else:
                place, memory_id = rng.choice(places), f"m{n % 13}"
                audience = frozenset(rng.sample([*agents, "*"], rng.randint(0, 2)))
                for s in (sqlite, memory):
                    await s.shares.set_audience(place, memory_id, audience, float(n))
            for tenant in tenants:
                for user in (*users, "*"):
                    for agent in (*agents, "*", "mallory"):
                        assert await sqlite.shares.for_reader(tenant, user, agent) == await memory.shares.for_reader(tenant, user, agent), \
                            (n, tenant, user, agent)
    finally:
        await sqlite.aclose()


def test_a_readers_share_lookup_is_an_indexed_query(tmp_path):
    """Scale: the per-recall lookup must use the reader index, never scan every share."""
    s = SqliteState(tmp_path / "bridge.sqlite3")
    try:
        plans = {
            "shared_with": "SELECT scope, memory_id FROM shares WHERE tenant_id = ? AND user_id = ? AND agent_id IN (?, ?)",
            "teams_of": "SELECT team_id FROM team_members WHERE tenant_id = ? AND agent_id = ?",
            "audience_of": "SELECT memory_id, agent_id FROM shares WHERE scope = ? AND memory_id IN (?)",
            "for_reader": f"{_shared_with_probes('a', 'a', 'a')[0]} UNION ALL {_TEAMS_PROBE}",
        }
        for name, sql in plans.items():
            detail = " ".join(str(r[-1]) for r in s.db.query("EXPLAIN QUERY PLAN " + sql, ("a",) * sql.count("?")))
            assert "USING" in detail and "SCAN" not in detail.replace("USING INDEX", ""), f"{name}: {detail}"
    finally:
        s.close()


async def test_a_readers_sharing_is_kept_until_a_share_or_team_is_written(tmp_path):
    """The SQLite store answers a reader again from what it read while no connection has written
    the shares or team tables since (their change number, raised by triggers); a share, a
    narrowing, a team change by this connection, another one or a plain sqlite3 client sends the
    next recall back to the query, while an audit commit (every few dozen recalls) does not."""
    import sqlite3

    path = tmp_path / "bridge.sqlite3"
    here, elsewhere = SqliteState(path), SqliteState(path)  # two connections, as two processes
    probes = 0
    real_query = here.db.query

    def counted(sql, params=()):
        nonlocal probes
        probes += "FROM shares" in sql
        return real_query(sql, params)

    here.db.query = counted  # type: ignore[method-assign]
    reader = ("acme", "alice", "bajie")
    assert (await here.shares.for_reader(*reader)).shared == {}
    await here.shares.for_reader(*reader)
    assert probes == 1  # nothing written in between: kept
    await here.audit.append(_identity(), "write", memory_ids=["x"])  # commits to the file, not to the shares
    await elsewhere.audit.append(_identity(), "write", memory_ids=["y"])
    assert (await here.shares.for_reader(*reader)).shared == {} and probes == 1
    await elsewhere.shares.set_audience(WUKONG, "m1", frozenset({"bajie"}), 1.0)  # another connection shares
    assert (await here.shares.for_reader(*reader)).shared == {WUKONG: frozenset({"m1"})}
    assert probes == 2
    await elsewhere.shares.set_audience(WUKONG, "m1", frozenset({"sha"}), 2.0)  # ... and narrows it away
    assert (await here.shares.for_reader(*reader)).shared == {}
    await here.shares.set_audience(TASK, "m3", frozenset({"bajie"}), 3.0)  # this connection shares
    assert (await here.shares.for_reader(*reader)).shared == {TASK: frozenset({"m3"})}
    await elsewhere.teams.add_member("acme", "red", "bajie")
    assert (await here.shares.for_reader(*reader)).teams == frozenset({"red"})
    plain = sqlite3.connect(path, isolation_level=None)  # no code of ours: the triggers still count
    plain.execute("UPDATE shares SET agent_id = 'sha' WHERE memory_id = 'm3'")
    assert (await here.shares.for_reader(*reader)).shared == {}
    plain.execute("DELETE FROM team_members WHERE agent_id = 'bajie'")
    assert (await here.shares.for_reader(*reader)).teams == frozenset()
    plain.execute("BEGIN IMMEDIATE")
    plain.execute("INSERT INTO shares VALUES ('acme', 'alice', ?, 'm4', 'bajie', 4.0)", (str(TASK),))
    plain.execute("ROLLBACK")  # never committed: nothing to see, and the kept answer still holds
    before = probes
    assert (await here.shares.for_reader(*reader)).shared == {} and probes == before
    plain.execute("INSERT INTO shares VALUES ('acme', 'alice', ?, 'm4', 'bajie', 4.0)", (str(TASK),))
    assert (await here.shares.for_reader(*reader)).shared == {TASK: frozenset({"m4"})} and probes == before + 1
    plain.close()
    with pytest.raises(TypeError):
        (await here.shares.for_reader(*reader)).shared[WUKONG] = frozenset({"m9"})  # shared by recalls: read-only
    await here.aclose()
    await elsewhere.aclose()


def _identity():
    from identity.model import MemoryIdentity

    return MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="bajie", session_id="s1")
