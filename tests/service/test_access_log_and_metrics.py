"""The access log line and the request metrics keep every field: a field that disappears, is
renamed or is written differently from `json.dumps` fails here.

The line is written by hand on the hot path (observability.py), so it is checked against
`json.dumps` of the same entry, also for strings that need escaping; the latency histogram's
children are kept per label set, so repeated and distinct label sets are counted apart."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from bridge.doors.http.app import new_request_id
from bridge.doors.http.observability import Metrics, access_log
from tests.service.asgikit import in_process_service

_FIELDS = ["ts", "request_id", "method", "route", "status", "duration_ms"]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def access_lines() -> Iterator[list[str]]:
    logger = logging.getLogger("viking_bridge.access")
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _as_json_dumps_writes_it(line: str) -> dict:
    entry = json.loads(line)
    assert line == json.dumps(entry, separators=(",", ":")), line  # same keys, order, escaping and numbers
    return entry


@pytest.mark.parametrize(
    ("principal", "error"),
    [("acme/u1@coder", None), (None, "Unauthenticated"), ('t/"quoted" \\ 研发\u2028/x@a', "Err\n\t\x00"), ("", "")],
)
def test_access_log_line_is_what_json_dumps_writes(access_lines, principal, error) -> None:
    started = time.perf_counter() - 0.0123
    before = time.time()
    access_log("req-12345678", "GET", "/api/v1/memories/{memory_id}", 404, started, principal, error)
    (line,) = access_lines
    entry = _as_json_dumps_writes_it(line)
    expected = _FIELDS + (["principal"] if principal else []) + (["error"] if error else [])
    assert list(entry) == expected
    assert entry["request_id"] == "req-12345678" and entry["method"] == "GET" and entry["route"] == "/api/v1/memories/{memory_id}"
    assert entry["status"] == 404 and isinstance(entry["status"], int)
    assert before - 0.001 <= entry["ts"] <= time.time() + 0.001 and round(entry["ts"], 3) == entry["ts"]
    assert 12.0 <= entry["duration_ms"] < 10_000 and round(entry["duration_ms"], 2) == entry["duration_ms"]
    if principal:
        assert entry["principal"] == principal
    if error:
        assert entry["error"] == error


async def test_served_requests_log_every_field(tmp_path: Path, access_lines) -> None:
    async with in_process_service(tmp_path) as (client, _app, _bridge):
        access_lines.clear()
        ok = await client.get("/api/v1/recall", params={"query": "runbook"}, headers={"X-Request-Id": "req-fields-0001"})
        refused = await client.get("/api/v1/recall", params={"query": "runbook"}, headers={"X-API-Key": ""})
        assert ok.status_code == 200 and refused.status_code == 401
    first, second = (_as_json_dumps_writes_it(line) for line in access_lines)
    assert list(first) == [*_FIELDS, "principal"]
    assert first["request_id"] == "req-fields-0001" and first["method"] == "GET" and first["route"] == "/api/v1/recall"
    assert first["status"] == 200 and first["principal"] == "acme/u1@a"
    assert list(second) == [*_FIELDS, "error"]
    assert second["status"] == 401 and second["error"] == "InvalidCredential" and second["request_id"] == refused.headers["x-request-id"]


def test_request_ids_are_uuid4_hex() -> None:
    ids = {new_request_id() for _ in range(200)}
    assert len(ids) == 200
    for made in ids:
        assert re.fullmatch(r"[0-9a-f]{32}", made)
        parsed = uuid.UUID(hex=made)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and parsed.hex == made


def _sample(text: str, name: str, labels: str) -> float:
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", text, re.MULTILINE)
    assert match, f"{name}{{{labels}}} missing from\n{text}"
    return float(match.group(1))


def test_latency_and_denials_are_counted_per_label_set() -> None:
    metrics = Metrics()
    for seconds in (0.0004, 0.003, 0.2):
        metrics.observe("GET", "/api/v1/recall", 200, seconds)
    metrics.observe("GET", "/api/v1/recall", 401, 0.001)
    metrics.observe("POST", "/api/v1/recall", 200, 0.002)
    metrics.observe("GET", "/api/v1/recall", 401, 0.001)
    text = generate_latest(metrics.registry).decode()
    count = "vb_http_request_duration_seconds_count"
    assert _sample(text, count, 'method="GET",route="/api/v1/recall",status="200"') == 3
    assert _sample(text, count, 'method="GET",route="/api/v1/recall",status="401"') == 2
    assert _sample(text, count, 'method="POST",route="/api/v1/recall",status="200"') == 1
    assert _sample(text, "vb_http_request_duration_seconds_sum", 'method="GET",route="/api/v1/recall",status="200"') == pytest.approx(0.2034)
    assert _sample(text, "vb_http_request_duration_seconds_bucket", 'le="0.0005",method="GET",route="/api/v1/recall",status="200"') == 1
    assert _sample(text, "vb_denied_total", 'status="401"') == 2
