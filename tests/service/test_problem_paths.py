"""No API answer shows the server's file-system paths: a store's location belongs in the
operator's log, not in a problem+json body an API client reads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from adapters.local.errors import StoreInUse, storage_error
from bridge.doors.http.problems import problem_for, without_server_paths
from bridge.errors import ConfigurationError, CorruptStorage


@pytest.mark.parametrize("exc", [
    storage_error(sqlite3.OperationalError("database is locked"), Path("/home/op/.local/share/viking-bridge/store/memories.sqlite3")),
    StoreInUse("the store is being re-embedded by another process", path="/srv/vb/store"),
    CorruptStorage("the store at /srv/vb/store was replaced; restore it or re-initialise", path="/srv/vb/store"),
    ConfigurationError("cannot read /etc/viking-bridge/roles.toml: permission denied"),
])
def test_no_problem_body_names_a_server_path(exc: Exception) -> None:
    _, body, _ = problem_for(exc, "req-1")
    text = json.dumps(body)
    assert "/srv/" not in text and "/home/" not in text and "/etc/" not in text, text
    assert body["detail"]  # still says what happened


def test_what_is_not_a_server_path_is_kept() -> None:
    text = "GET /api/v1/memories/x in acme/ws/alpha, see https://example.org/docs/a"
    assert without_server_paths(text) == text
