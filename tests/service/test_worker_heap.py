"""A worker of `viking-bridge serve` moves its start-up heap out of the garbage collector's
passes (bridge/doors/http/worker.py); an app built in someone else's process leaves the collector
alone. The served worker is checked by its log line and by a request answered after the freeze;
the in-process app by the process's own freeze count, which must not move."""

from __future__ import annotations

import gc
import re
import time

from fastapi.testclient import TestClient

from bridge.doors.http.app import create_app
from bridge.doors.http.auth import EdgeAuthenticator
from bridge.doors.http.settings import ServiceSettings
from bridge.facade import MemoryBridge
from identity.providers.api_keys import ApiKeyProvider, ApiKeyStore


def _frozen_counts(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"worker start-up: (\d+) objects moved out", text)]


def test_each_served_worker_freezes_its_start_up_heap_once_and_serves(service):
    deadline = time.monotonic() + 60  # the service is ready when one worker is; the other may still start
    while len(frozen := _frozen_counts(service.err_path.read_text(encoding="utf-8"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(frozen) == 2, frozen  # the session's service runs two workers: one line each
    assert all(n > 10_000 for n in frozen), frozen  # the modules, the app and the bridge: tens of thousands
    key = service.api_key("alice")
    assert service.client(key).get("/api/v1/recall", params={"query": "anything"}).status_code == 200


def test_an_app_in_a_process_it_does_not_own_leaves_the_collector_alone(tmp_path):
    before = gc.get_freeze_count()
    bridge = MemoryBridge.open_local(tmp_path / "home")
    app = create_app(bridge, EdgeAuthenticator({"api_key": ApiKeyProvider(ApiKeyStore(tmp_path / "keys.sqlite3"))}), ServiceSettings(rate_burst=0))
    with TestClient(app) as client:  # the lifespan runs: open checks, no freeze
        assert client.get("/ready").status_code == 200
    assert gc.get_freeze_count() == before
