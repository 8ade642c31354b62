"""Seed 000's `memory_type: private` (bridge/policy/sharing.py `private_target`) at its edges: it
lands in one of the writer's own places — the one named, or the agent's (its task's) by default —
and never in a place a whole audience reads. Pure functions of an identity."""

from __future__ import annotations

import pytest

from adapters.scopes import Visibility
from bridge.policy.sharing import private_target
from tests.kit import make_identity

ALICE = make_identity("alice")


@pytest.mark.parametrize("personal", [Visibility.PRIVATE, Visibility.AGENT, Visibility.TASK])
def test_private_memory_type_keeps_a_named_personal_place(personal):
    assert private_target(ALICE, personal) is personal


def test_team_memory_is_narrowed_only_when_the_narrowed_place_name_fits():
    """The narrowed place's id is the team's id behind a reserved prefix; an id too long for that
    is refused with the reason, at exactly one character past the limit."""
    from bridge.errors import InvalidInput
    from bridge.policy.sharing import decide_narrowed_team_write, decide_team_write
    from bridge.vocabulary import NARROWED_TEAM_PREFIX

    fits = "t" * (128 - len(NARROWED_TEAM_PREFIX))
    team = decide_team_write(ALICE, fits, frozenset({fits}))
    decision, audience = decide_narrowed_team_write(ALICE, team, ("coder",), frozenset({"coder", "assistant"}))
    assert decision.scope.owner_id == NARROWED_TEAM_PREFIX + fits and audience == {"coder", "assistant"}
    too_long = fits + "t"
    team = decide_team_write(ALICE, too_long, frozenset({too_long}))
    with pytest.raises(InvalidInput, match="too long to narrow"):
        decide_narrowed_team_write(ALICE, team, ("coder",), frozenset({"coder", "assistant"}))
