"""Requests naming no session share the identity's default session, which nobody else can use."""

from __future__ import annotations

from bridge.doors.edge import default_session_id
from tests.service.servicekit import Service, assert_problem


def test_default_session_is_stable_per_identity_and_unusable_by_another(service: Service) -> None:
    a = service.client(service.api_key("dflt-a"))
    rows_before = a.get("/api/v1/audit", params={"limit": 5}).json()
    a.get("/api/v1/recall", params={"query": "q"})
    rows = a.get("/api/v1/audit", params={"limit": 5}).json()
    sessions = {r["session_id"] for r in rows + rows_before}
    assert len(sessions) == 1 and next(iter(sessions)).startswith("dflt"), sessions
    stolen = next(iter(sessions))
    intruder = service.client(service.api_key("dflt-b"), **{"X-Session-Id": stolen})
    assert_problem(intruder.get("/api/v1/recall", params={"query": "q"}), 403)


def test_default_session_id_depends_on_everything_that_decides_access() -> None:
    from identity.model import MemoryIdentity

    base = MemoryIdentity(tenant_id="t", user_id="u", agent_id="a", session_id="s1")
    assert default_session_id(base) == default_session_id(base.with_session("s2"))
    for change in ({"user_id": "v"}, {"agent_id": "b"}, {"roles": frozenset({"admin"})}, {"tenant_id": "t2"}):
        assert default_session_id(base.model_copy(update=change)) != default_session_id(base)
