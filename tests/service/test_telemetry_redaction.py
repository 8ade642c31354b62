"""The service's OpenTelemetry spans never carry a question: `url.query` keeps its keys only.

FastAPI records a server span per request once an SDK is configured, with the raw query string
as `url.query`; for GET /api/v1/recall that is the user's question, which no log of the service
holds. A provider that does not carry the redaction when the service is built (configured
later, or one that cannot take the processor) gets no span of FastAPI's at all. Run in a child
process: an SDK tracer provider is process-wide and set once, and it would turn FastAPI's
tracing on for every later test of this process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed (the test extra installs it)")

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exported = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exported))  # added first: it still never sees the value
trace.set_tracer_provider(provider)

from tests.service.asgikit import in_process_service

async def main():
    async with in_process_service(Path(sys.argv[1])) as (client, app, bridge):
        response = await client.get("/api/v1/recall", params={"query": "secret-question-about-the-merger", "agent_id": "a"})
        assert response.status_code == 200, response.text
    spans = [{"name": s.name, "attributes": dict(s.attributes or {})} for s in exported.get_finished_spans()]
    print(json.dumps(spans))

asyncio.run(main())
"""


def test_a_recall_span_holds_the_query_keys_and_never_the_question(tmp_path: Path) -> None:
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert child.returncode == 0, child.stderr[-3000:]
    spans = json.loads(child.stdout.strip().splitlines()[-1])
    recall = [s for s in spans if s["attributes"].get("url.path") == "/api/v1/recall" and "agent_id" in str(s["attributes"].get("url.query"))]
    assert recall, f"FastAPI recorded no span of the recall (its tracing is what this guards): {spans}"
    assert recall[-1]["attributes"]["url.query"] == "query=REDACTED&agent_id=REDACTED"
    assert "secret-question" not in json.dumps(spans)


LATE_CHILD = r"""
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.service.asgikit import in_process_service

async def main():
    async with in_process_service(Path(sys.argv[1])) as (client, app, bridge):
        exported = InMemorySpanExporter()
        provider = TracerProvider()  # configured after the service was built and started
        provider.add_span_processor(SimpleSpanProcessor(exported))
        trace.set_tracer_provider(provider)
        response = await client.get("/api/v1/recall", params={"query": "secret-question-about-the-merger", "agent_id": "a"})
        assert response.status_code == 200, response.text
        ours = trace.get_tracer("probe").start_span("probe")  # the provider records spans: only FastAPI's are missing
        ours.end()
    spans = [{"name": s.name, "attributes": dict(s.attributes or {})} for s in exported.get_finished_spans()]
    print(json.dumps(spans))

asyncio.run(main())
"""


def test_a_tracer_provider_configured_after_start_gets_no_span_of_a_request(tmp_path: Path) -> None:
    """FastAPI's telemetry is decided when the app is built (telemetry.py): a provider set later
    would not have the redacting processor, so it must get no span of FastAPI's at all."""
    child = subprocess.run([sys.executable, "-c", LATE_CHILD, str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert child.returncode == 0, child.stderr[-3000:]
    spans = json.loads(child.stdout.strip().splitlines()[-1])
    assert [s["name"] for s in spans] == ["probe"], spans
    assert "secret-question" not in child.stdout


FOREIGN_CHILD = r"""
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exported = InMemorySpanExporter()

class Foreign(trace.TracerProvider):
    # records spans (through an SDK provider of its own) but takes no processor: nothing can redact it
    def __init__(self):
        self._inner = TracerProvider()
        self._inner.add_span_processor(SimpleSpanProcessor(exported))

    def get_tracer(self, *args, **kwargs):
        return self._inner.get_tracer(*args, **kwargs)

trace.set_tracer_provider(Foreign())  # configured before the service is built

from tests.service.asgikit import in_process_service

async def main():
    async with in_process_service(Path(sys.argv[1])) as (client, app, bridge):
        response = await client.get("/api/v1/recall", params={"query": "secret-question-about-the-merger", "agent_id": "a"})
        assert response.status_code == 200, response.text
        ours = trace.get_tracer("probe").start_span("probe")  # the provider records spans: only FastAPI's are missing
        ours.end()
    spans = [{"name": s.name, "attributes": dict(s.attributes or {})} for s in exported.get_finished_spans()]
    print(json.dumps(spans))

asyncio.run(main())
"""


def test_a_tracer_provider_that_cannot_take_the_redaction_gets_no_span_of_a_request(tmp_path: Path) -> None:
    """FastAPI traces only into a provider that carries the redacting processor: one that records
    spans but cannot take a processor (another SDK, a wrapper) gets none, rather than the raw query."""
    child = subprocess.run([sys.executable, "-c", FOREIGN_CHILD, str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert child.returncode == 0, child.stderr[-3000:]
    spans = json.loads(child.stdout.strip().splitlines()[-1])
    assert [s["name"] for s in spans] == ["probe"], spans
    assert "secret-question" not in child.stdout


def test_a_key_that_is_not_a_parameter_name_is_redacted_too() -> None:
    from bridge.doors.http.telemetry import redacted_query

    assert redacted_query("query=the+merger&agent_id=a&only_scopes=x&only_scopes=y") == "query=REDACTED&agent_id=REDACTED&only_scopes=REDACTED&only_scopes=REDACTED"
    assert redacted_query("what+is+my+dog%27s+name") == "REDACTED=REDACTED"
    assert redacted_query("") == ""
