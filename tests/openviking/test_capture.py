"""Conversation capture: messages go to a per-principal session, commit returns a task we poll."""

from __future__ import annotations

import pytest

from adapters.base import ConversationMessage, Provenance
from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey


async def test_capture_commits_and_the_task_reaches_a_terminal_state(api_backend):
    scope = ScopeKey.private("acme", "alice")
    receipt = await api_backend.capture(
        scope,
        [ConversationMessage("user", "remember: I prefer window seats"), ConversationMessage("assistant", "Noted.")],
        session_key="fp-1:client-session-1",
        provenance=Provenance("alice", "coder"),
    )
    assert receipt.accepted_messages == 2 and receipt.task_id
    task = await api_backend.wait_for_capture(scope, receipt, deadline=60)
    assert task["status"] in ("completed", "succeeded", "success", "failed"), task["status"]
    # the same client session key for another identity is another backend session
    other = await api_backend.capture(ScopeKey.private("acme", "bob"), [ConversationMessage("user", "hi")],
                                      session_key="fp-1:client-session-1", provenance=Provenance("bob", "coder"))
    assert other.backend_session_id != receipt.backend_session_id


async def test_capture_is_refused_for_shared_scopes(api_backend):
    with pytest.raises(InvalidRequest):
        await api_backend.capture(ScopeKey.workspace("acme", "alpha"), [ConversationMessage("user", "x")],
                                  session_key="k", provenance=Provenance("alice", "coder"))
