"""schemathesis against the live server: no 5xx, every response conforms to docs/openapi.json,
and no fuzzed request ever returns a memory another identity wrote.

The world is seeded first: canary memories of another tenant (every visibility it can write)
and of another user of the fuzzing identity's own tenant (private, agent, another workspace),
each carrying a marker no response to the fuzzing identity may contain.

`positive_data_acceptance` is left out on purpose: the id and scope grammar (Unicode categories,
reserved characters) is checked by the operations, not expressed in JSON Schema, so a
schema-valid but grammar-breaking id is a 400 by design. Every other default check runs. Examples per operation
stay modest (`FUZZ_EXAMPLES`, env VIKING_BRIDGE_FUZZ_EXAMPLES) so CI stays well within budget.

Not named `test_*`: tests/service/test_fuzz.py runs this module in a child session of its own,
because schemathesis gives the test of every operation one and the same test id, and the
suite's pytest-xdist workers keep one item per id (44 of the 45 operations would silently go
unfuzzed). Alone: `pytest tests/service/fuzz_schemathesis.py`.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case, Response
from schemathesis.config import SchemathesisConfig

from schemathesis.specs.openapi.checks import positive_data_acceptance

from bridge.doors.http.openapi import spec
from tests.service.servicekit import Service

FUZZ_EXAMPLES = int(os.environ.get("VIKING_BRIDGE_FUZZ_EXAMPLES", "8"))
MARKER = "canary" + secrets.token_hex(6)


@dataclass
class FuzzWorld:
    service: Service
    key: str
    canary_ids: set[str]


@pytest.fixture(scope="session")
def fuzz_world(service: Service) -> FuzzWorld:
    canary_ids: set[str] = set()
    globex = service.client(service.api_key("fz-other", tenant="globex", workspace="fuzz-ws", departments=["fuzz-dept"], roles=["admin", "approver"]))
    neighbour = service.client(service.api_key("fz-neighbour", workspace="elsewhere", agent="assistant"))
    writes = [
        (globex, {"content": f"{MARKER} globex private", "kind": "preference"}),
        (globex, {"content": f"{MARKER} globex workspace", "kind": "fact", "visibility": "workspace"}),
        (globex, {"content": f"{MARKER} globex department", "kind": "standard", "visibility": "department"}),
        (globex, {"content": f"{MARKER} globex tenant", "kind": "fact", "visibility": "tenant"}),
        (neighbour, {"content": f"{MARKER} neighbour private", "kind": "preference"}),
        (neighbour, {"content": f"{MARKER} neighbour agent", "kind": "procedure", "visibility": "agent"}),
        (neighbour, {"content": f"{MARKER} neighbour workspace", "kind": "fact", "visibility": "workspace"}),
    ]
    for client, body in writes:
        r = client.post("/api/v1/memories", json=body)
        assert r.status_code == 201, r.text
        canary_ids.add(r.json()["memory_id"])
    key = service.api_key("fz-user", workspace="fuzz-ws", departments=["fuzz-dept"])
    own = service.client(key)
    for body in ({"content": "fuzz user's own preference for tea", "kind": "preference"}, {"content": "fuzz workspace uses python", "kind": "fact"}):
        assert own.post("/api/v1/memories", json=body).status_code == 201
    return FuzzWorld(service, key, canary_ids)


# A fuzzed request that breaks the schema must be refused with a 4xx; 413/414 (body/query size
# limits) and 429 are refusals too, so they count as rejections alongside 400/401/403/404/422.
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": ["400", "401", "403", "404", "409", "413", "414", "422", "429"]}}})
schema = schemathesis.openapi.from_dict(spec(), config=CONFIG)  # the code's spec (equal to docs/openapi.json: test_openapi_drift)


@schema.parametrize()
@settings(max_examples=FUZZ_EXAMPLES, suppress_health_check=list(HealthCheck), deadline=None)
def test_fuzzed_requests_conform_and_never_leak(case: schemathesis.Case, fuzz_world: FuzzWorld) -> None:
    response = case.call_and_validate(base_url=fuzz_world.service.url, headers={"X-API-Key": fuzz_world.key}, excluded_checks=[positive_data_acceptance])
    text = response.text
    assert MARKER not in text, f"{case.method} {case.path} returned another identity's memory: {text[:300]}"
    leaked = {i for i in fuzz_world.canary_ids if i in text}
    assert not leaked, f"{case.method} {case.path} returned ids of another identity's memories: {leaked}"


def test_stateful_workflows_follow_links_conform_and_never_leak(fuzz_world: FuzzWorld) -> None:
    """Stateful: the spec's links feed real ids (a memory just written, a grant, a manifest) into
    get/edit/forget/approve/reject/promote/revoke, so fuzzing reaches existing objects."""
    base = schema.as_state_machine()

    class Workflow(base):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Case) -> dict:
            return {"base_url": fuzz_world.service.url, "headers": {"X-API-Key": fuzz_world.key}}

        def validate_response(self, response: Response, case: Case, additional_checks=None, **kwargs) -> None:  # noqa: ANN001, ANN003
            case.validate_response(response, excluded_checks=[positive_data_acceptance], transport_kwargs=kwargs)
            text = response.text
            assert MARKER not in text and not {i for i in fuzz_world.canary_ids if i in text}, f"{case.method} {case.path} leaked: {text[:300]}"

    Workflow.run(settings=settings(max_examples=FUZZ_EXAMPLES, stateful_step_count=6, deadline=None, suppress_health_check=list(HealthCheck)))
