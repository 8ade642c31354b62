"""The sharing rules (bridge/policy/sharing.py, the task scope in bridge/policy/__init__.py) as pure
functions: who may change visible_to, what a share adds to a ScopeSet (exactly the shared ids,
only for the same tenant and user, never narrowing a place the reader owns), team writes by
members only, task placement, and the typed refusals of bad sharing fields."""

from __future__ import annotations

import pytest

from adapters.scopes import ReadSource, ScopeEntry, ScopeKey, ScopeSet, Visibility
from bridge.errors import InvalidInput, NotPermitted
from bridge.operations import Capture, Remember
from bridge.policy import Policy
from bridge.operations.sharing import AddTeamMember, SetTeamMembers, SetVisibleTo
from bridge.policy.sharing import (
    MemoryType, check_share_change, check_team_admin, decide_team_write, memory_type_of, visible_to_of,
    with_shares_and_teams, write_audience,
)
from bridge.vocabulary import Kind, Purpose
from identity.model import MemoryIdentity

POLICY = Policy()
WUKONG = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="wukong", session_id="s1")
BAJIE = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="bajie", session_id="s2")
ADMIN = MemoryIdentity(tenant_id="acme", user_id="root", agent_id="ops", session_id="s3", roles=frozenset({"admin"}))
EVIL_ADMIN = MemoryIdentity(tenant_id="globex", user_id="mallory", agent_id="wukong", session_id="s4", roles=frozenset({"admin"}))
WUKONG_SCOPE = ScopeKey.agent("acme", "wukong", "alice")


def _base(identity: MemoryIdentity) -> ScopeSet:
    return POLICY.readable_scopes(identity, Purpose.CHAT)


def test_a_share_adds_exactly_the_shared_ids_of_the_authors_scope():
    scopes = with_shares_and_teams(POLICY, BAJIE, Purpose.CHAT, _base(BAJIE), {WUKONG_SCOPE: frozenset({"m1"})}, frozenset())
    entry = scopes.entry(WUKONG_SCOPE)
    assert entry.memory_ids == frozenset({"m1"}) and entry.source is ReadSource.SHARE and "shared by agent wukong" in entry.reason
    assert scopes.permits(WUKONG_SCOPE, "m1") and not scopes.permits(WUKONG_SCOPE, "m2")
    assert entry.weight < scopes.entry(ScopeKey.agent("acme", "bajie", "alice")).weight


def test_a_share_of_another_user_or_tenant_or_a_shared_scope_is_ignored():
    """Second wall: the store's index already answers per tenant and user; a row that does not
    fit is dropped, never honoured."""
    foreign = {
        ScopeKey.agent("acme", "wukong", "bob"): frozenset({"m1"}),
        ScopeKey.agent("globex", "wukong", "alice"): frozenset({"m2"}),
        ScopeKey.workspace("acme", "beta"): frozenset({"m3"}),
        ScopeKey.private("acme", "alice"): frozenset({"m4"}),
    }
    scopes = with_shares_and_teams(POLICY, BAJIE, Purpose.CHAT, _base(BAJIE), foreign, frozenset())
    assert set(scopes.keys) == set(_base(BAJIE).keys)


def test_a_share_never_narrows_a_place_the_reader_owns():
    own = ScopeKey.agent("acme", "bajie", "alice")
    scopes = with_shares_and_teams(POLICY, BAJIE, Purpose.CHAT, _base(BAJIE), {own: frozenset({"m1"})}, frozenset())
    assert scopes.entry(own).memory_ids is None


def test_team_membership_adds_the_team_scope_and_nothing_else():
    scopes = with_shares_and_teams(POLICY, BAJIE, Purpose.CODING, _base(BAJIE), {}, frozenset({"pilgrims"}))
    entry = scopes.entry(ScopeKey.team("acme", "pilgrims"))
    assert entry.memory_ids is None and entry.reason == "member of team pilgrims"
    assert ScopeKey.team("acme", "demons") not in scopes


@pytest.mark.parametrize("who", [BAJIE, MemoryIdentity(tenant_id="acme", user_id="bob", agent_id="wukong", session_id="s"), EVIL_ADMIN])
def test_only_the_owning_agent_or_a_tenant_admin_changes_visible_to(who):
    check_share_change(WUKONG, WUKONG_SCOPE)
    check_share_change(ADMIN, WUKONG_SCOPE)
    with pytest.raises(NotPermitted):
        check_share_change(who, WUKONG_SCOPE)


@pytest.mark.parametrize("scope", [ScopeKey.private("acme", "alice"), ScopeKey.workspace("acme", "alpha"), ScopeKey.team("acme", "red"), ScopeKey.tenant("acme")])
def test_only_agent_and_task_memories_have_a_selective_visible_to(scope):
    with pytest.raises(NotPermitted):
        check_share_change(ADMIN, scope)
    with pytest.raises(InvalidInput):
        write_audience(WUKONG, scope, ("bajie",))
    assert write_audience(WUKONG, scope, ("*",)) == frozenset()


def test_write_audience_never_lists_the_owner_and_keeps_star_alone():
    assert write_audience(WUKONG, WUKONG_SCOPE, ("bajie", "wukong")) == {"bajie"}
    assert write_audience(WUKONG, WUKONG_SCOPE, ("wukong",)) == frozenset()
    with pytest.raises(InvalidInput):
        write_audience(WUKONG, WUKONG_SCOPE, ("*", "bajie"))


def test_memory_type_and_visible_to_are_derived_from_the_place():
    assert memory_type_of(WUKONG_SCOPE) is MemoryType.PRIVATE
    assert memory_type_of(ScopeKey.task("acme", "wukong", "alice", "t1")) is MemoryType.PRIVATE
    assert memory_type_of(ScopeKey.team("acme", "red")) is MemoryType.TEAM
    assert memory_type_of(ScopeKey.workspace("acme", "alpha")) is MemoryType.TEAM
    assert memory_type_of(WUKONG_SCOPE, ReadSource.MANIFEST) is MemoryType.INJECTED
    assert visible_to_of(WUKONG_SCOPE) == ("wukong",)
    assert visible_to_of(WUKONG_SCOPE, frozenset({"sha", "bajie"})) == ("wukong", "bajie", "sha")
    assert visible_to_of(WUKONG_SCOPE, frozenset({"*"})) == ("wukong", "*")
    assert visible_to_of(ScopeKey.team("acme", "red")) == ("*",)


def test_team_writes_only_by_members():
    assert decide_team_write(WUKONG, "red", frozenset({"red"})).scope == ScopeKey.team("acme", "red")
    assert decide_team_write(WUKONG, None, frozenset({"red"})).scope == ScopeKey.team("acme", "red")
    for team, member_of in (("red", frozenset()), ("blue", frozenset({"red"})), (None, frozenset({"red", "blue"})), (None, frozenset())):
        with pytest.raises(NotPermitted):
            decide_team_write(WUKONG, team, member_of)
    with pytest.raises(NotPermitted):
        check_team_admin(WUKONG)
    check_team_admin(ADMIN)


def test_a_task_id_puts_working_memory_in_the_task_scope_and_only_that_task_reads_it():
    river = WUKONG.model_copy(update={"task_id": "river"})
    task_scope = ScopeKey.task("acme", "wukong", "alice", "river")
    assert POLICY.decide_write(river, Kind.PROCEDURE, None).scope == task_scope
    assert POLICY.decide_write(river, Kind.PROCEDURE, Visibility.AGENT).scope == WUKONG_SCOPE  # explicit: long-term agent memory
    assert POLICY.decide_write(WUKONG, Kind.PROCEDURE, None).scope == WUKONG_SCOPE  # no task: nothing changes
    with pytest.raises(NotPermitted):
        POLICY.decide_write(WUKONG, Kind.NOTE, Visibility.TASK)
    assert task_scope in POLICY.readable_scopes(river, Purpose.CHAT)
    mountain = WUKONG.model_copy(update={"task_id": "mountain"})
    assert task_scope not in POLICY.readable_scopes(mountain, Purpose.CHAT)
    assert task_scope not in POLICY.readable_scopes(WUKONG, Purpose.CODING)
    assert POLICY.is_own_scope(river, task_scope) and not POLICY.is_own_scope(mountain, task_scope)
    with pytest.raises(NotPermitted):
        POLICY.check_grant_issue(ADMIN, ScopeKey.task("acme", "wukong", "alice", "river"), 60, "look")


@pytest.mark.parametrize("fields", [
    {"memory_type": "injected"}, {"memory_type": "public"}, {"memory_type": 3}, {"visible_to": "bajie"}, {"visible_to": []},
    {"visible_to": ["*", "bajie"]}, {"visible_to": ["bad/id"]}, {"visible_to": ["x"] * 65}, {"team_id": "a/b"}, {"team_id": ""},
])
def test_bad_sharing_fields_are_refused_with_a_typed_error(fields):
    with pytest.raises(InvalidInput):
        Remember(content="a note", kind="note", **fields)
    with pytest.raises(InvalidInput):
        Capture(messages=({"role": "user", "content": "I prefer tea"},), **fields)


def test_sharing_operations_validate_their_fields():
    assert SetVisibleTo(ref=("acme/agent/wukong/alice", "m1"), visible_to=["sha", "bajie", "sha"]).visible_to == ("bajie", "sha")
    for bad in (None, [], ["*", "x"], ["../x"]):
        with pytest.raises(InvalidInput):
            SetVisibleTo(ref=("acme/agent/wukong/alice", "m1"), visible_to=bad)  # type: ignore[arg-type]
    assert SetTeamMembers(team_id="red", agent_ids=["b", "a", "a"]).agent_ids == ("a", "b")
    with pytest.raises(InvalidInput):
        SetTeamMembers(team_id="red", agent_ids="wukong")
    with pytest.raises(InvalidInput):
        AddTeamMember(team_id="red", member_agent_id="*")


# -- a team memory narrowed by visible_to (seed 000 3.3) ---------------------------------------
from bridge.policy.sharing import decide_narrowed_team_write, has_audience, narrowed_base, narrowed_team, reads_team  # noqa: E402

PILGRIMS = ScopeKey.team("acme", "pilgrims")
NARROWED = narrowed_team("acme", "pilgrims")
BOB_BAJIE = MemoryIdentity(tenant_id="acme", user_id="bob", agent_id="bajie", session_id="s5")


def test_the_narrowed_place_is_a_reserved_team_place_no_member_reads_in_full():
    assert narrowed_base(NARROWED) == "pilgrims" and NARROWED != PILGRIMS
    assert narrowed_base(PILGRIMS) is None and narrowed_base(WUKONG_SCOPE) is None
    assert has_audience(NARROWED) and has_audience(WUKONG_SCOPE) and has_audience(ScopeKey.task("acme", "w", "alice", "t"))
    assert not has_audience(PILGRIMS) and not has_audience(ScopeKey.workspace("acme", "alpha"))
    assert reads_team(WUKONG, PILGRIMS, frozenset({"pilgrims"}))
    assert not reads_team(WUKONG, PILGRIMS, frozenset({"demons"}))
    assert not reads_team(WUKONG, NARROWED, frozenset({"pilgrims", NARROWED.owner_id})), "never in full, whatever the state says"
    assert not reads_team(EVIL_ADMIN, PILGRIMS, frozenset({"pilgrims"}))
    assert not reads_team(WUKONG, ScopeKey.workspace("acme", "pilgrims"), frozenset({"pilgrims"}))
    assert visible_to_of(NARROWED, frozenset({"wukong", "bajie", "maomao"})) == ("bajie", "maomao", "wukong")
    assert memory_type_of(NARROWED) is MemoryType.TEAM


def test_a_narrowed_share_reads_exactly_its_ids_for_current_members_of_any_user():
    shares = {NARROWED: frozenset({"m1"})}
    got = with_shares_and_teams(POLICY, BOB_BAJIE, Purpose.CHAT, _base(BOB_BAJIE), shares, frozenset({"pilgrims"}))
    entry = {e.key: e for e in got}[NARROWED]
    assert entry.memory_ids == frozenset({"m1"}) and entry.source is ReadSource.SHARE
    assert PILGRIMS in {e.key for e in got} and {e.key: e for e in got}[PILGRIMS].memory_ids is None
    for teams in (frozenset(), frozenset({"demons"})):  # not (or no longer) a member of the team
        got = with_shares_and_teams(POLICY, BOB_BAJIE, Purpose.CHAT, _base(BOB_BAJIE), shares, teams)
        assert NARROWED not in {e.key for e in got}
    other = {narrowed_team("globex", "pilgrims"): frozenset({"m1"})}
    got = with_shares_and_teams(POLICY, BOB_BAJIE, Purpose.CHAT, _base(BOB_BAJIE), other, frozenset({"pilgrims"}))
    assert narrowed_team("globex", "pilgrims") not in {e.key for e in got}
    got = with_shares_and_teams(POLICY, BOB_BAJIE, Purpose.CHAT, _base(BOB_BAJIE), {NARROWED: frozenset()}, frozenset({"pilgrims", NARROWED.owner_id}))
    assert NARROWED not in {e.key for e in got}, "a reserved id among the teams is never read in full, an empty share reads nothing"


def test_narrowing_lists_members_only_and_always_includes_the_author():
    team = decide_team_write(WUKONG, "pilgrims", frozenset({"pilgrims"}))
    decision, audience = decide_narrowed_team_write(WUKONG, team, ("bajie",), frozenset({"wukong", "bajie", "shaseng"}))
    assert decision.scope == NARROWED and audience == {"bajie", "wukong"}
    with pytest.raises(InvalidInput, match="not members"):
        decide_narrowed_team_write(WUKONG, team, ("bajie", "tangseng"), frozenset({"wukong", "bajie"}))
    with pytest.raises(InvalidInput, match="not both"):
        decide_narrowed_team_write(WUKONG, team, ("*", "bajie"), frozenset({"wukong", "bajie"}))
    with pytest.raises(InvalidInput, match="reserved"):
        SetTeamMembers(team_id=NARROWED.owner_id, agent_ids=("wukong",))
    with pytest.raises(InvalidInput, match="reserved"):
        Remember(content="x", kind="note", memory_type="team", team_id=NARROWED.owner_id)


def test_membership_reads_the_team_in_full_even_when_an_injection_named_some_of_its_ids():
    injected = ScopeEntry(PILGRIMS, 0.5, "injected by alice@brain", grant_id="m1", memory_ids=frozenset({"x"}), source=ReadSource.MANIFEST)
    base = ScopeSet.from_entries([*_base(WUKONG), injected])
    got = {e.key: e for e in with_shares_and_teams(POLICY, WUKONG, Purpose.CHAT, base, {}, frozenset({"pilgrims"}))}
    assert got[PILGRIMS].memory_ids is None and got[PILGRIMS].source is ReadSource.OWN
