"""A child pytest uses the OpenViking server its parent run hands down, and only one that answers
in the right auth mode: a stale or wrong-mode entry makes the child start its own, never test one
mode's adapter against the other mode's server."""

from __future__ import annotations

import json

import pytest

from contract_tests.backends import openviking


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openviking, "_inherited", {})
    monkeypatch.delenv("OPENVIKING_URL", raising=False)
    monkeypatch.delenv("OPENVIKING_ROOT_API_KEY", raising=False)


def test_a_handed_down_server_in_the_right_mode_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(openviking.HANDED_DOWN, json.dumps({"api_key": ["http://127.0.0.1:1", "root"]}))
    monkeypatch.setattr(openviking, "_live_auth_mode", lambda url: "api_key")
    assert openviking.shared_server("api_key") == ("http://127.0.0.1:1", "root")
    assert openviking._unavailable("api_key") is None


def test_a_handed_down_server_in_another_mode_or_silent_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(openviking.HANDED_DOWN, json.dumps({"api_key": ["http://127.0.0.1:1", "root"]}))
    monkeypatch.setattr(openviking, "_live_auth_mode", lambda url: "trusted")
    assert openviking._handed_down("api_key") is None
    openviking._inherited.clear()
    monkeypatch.setattr(openviking, "_live_auth_mode", lambda url: None)
    assert openviking._handed_down("api_key") is None
    assert openviking._handed_down("trusted") is None  # no entry for that mode at all


def test_hand_down_names_this_processs_servers_and_keeps_what_the_parent_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(openviking.HANDED_DOWN, json.dumps({"trusted": ["http://127.0.0.1:2", "k2"]}))
    monkeypatch.setattr(openviking, "_unavailable", lambda mode: None)
    monkeypatch.setattr(openviking, "shared_server", lambda mode: ("http://127.0.0.1:1", "k1"))
    env = openviking.hand_down("api_key")
    assert json.loads(env[openviking.HANDED_DOWN]) == {"trusted": ["http://127.0.0.1:2", "k2"], "api_key": ["http://127.0.0.1:1", "k1"]}
