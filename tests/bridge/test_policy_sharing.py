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
