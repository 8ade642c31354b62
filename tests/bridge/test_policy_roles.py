"""What the role file permits (bridge/policy/roles.py), each rule at its edges: who injects into
whom, who passes injected memories on, and where a child's write-back may land. Pure functions
of a loaded role book and an identity; no store, no door."""

from __future__ import annotations

import pytest

from bridge.errors import RoleRefused
from bridge.policy.roles import check_inject, check_write_back
from bridge.roles.book import RoleBook
from bridge.roles.model import AgentRole, RoleFile
from tests.kit import make_identity

BOOK = RoleBook(RoleFile(agents={
    "planner": AgentRole(may_inject_into=("coder",), may_reinject=False),
    "router": AgentRole(may_inject_into=("*",), may_reinject=True),
    "coder": AgentRole(write_layers=("agent",), allowed_kinds=("fact",), may_reinject=True),
    "tester": AgentRole(write_layers=("agent", "workspace"), may_reinject=False),
}))


def _as(agent: str):
    return make_identity("alice", agent=agent)


def test_a_parent_injects_only_into_the_children_its_role_lists():
    check_inject(BOOK, _as("planner"), "coder", reinjection=False, grants_reinject=False)
    with pytest.raises(RoleRefused, match="may not inject into 'tester'"):
        check_inject(BOOK, _as("planner"), "tester", reinjection=False, grants_reinject=False)


def test_a_star_in_may_inject_into_means_any_child():
    check_inject(BOOK, _as("router"), "tester", reinjection=False, grants_reinject=False)
    with pytest.raises(RoleRefused, match="may not inject into"):
        check_inject(BOOK, _as("coder"), "tester", reinjection=False, grants_reinject=False)


def test_passing_injected_memories_on_needs_the_parents_may_reinject():
    check_inject(BOOK, _as("router"), "coder", reinjection=True, grants_reinject=False)
    with pytest.raises(RoleRefused, match="may not pass on injected memories"):
        check_inject(BOOK, _as("planner"), "coder", reinjection=True, grants_reinject=False)


def test_a_manifest_allows_re_injection_only_if_the_childs_role_does():
    check_inject(BOOK, _as("planner"), "coder", reinjection=False, grants_reinject=True)
    with pytest.raises(RoleRefused, match="'tester' may not re-inject"):
        check_inject(BOOK, _as("router"), "tester", reinjection=False, grants_reinject=True)


def test_an_agent_without_a_role_may_not_inject():
    with pytest.raises(RoleRefused, match="has no role"):
        check_inject(BOOK, _as("stranger"), "coder", reinjection=False, grants_reinject=False)


def test_a_write_back_lands_only_in_the_childs_write_layers():
    check_write_back(BOOK, _as("coder"), "agent", "fact")
    with pytest.raises(RoleRefused, match="may not write back into the workspace layer"):
        check_write_back(BOOK, _as("coder"), "workspace", "fact")


def test_a_write_back_is_of_an_allowed_kind_only_when_kinds_are_listed():
    with pytest.raises(RoleRefused, match="may not write back a decision"):
        check_write_back(BOOK, _as("coder"), "agent", "decision")
    check_write_back(BOOK, _as("tester"), "workspace", "decision")  # no allowed_kinds: every kind
