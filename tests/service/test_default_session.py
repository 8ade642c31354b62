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


KEY = b"k" * 32


def test_default_session_id_depends_on_everything_that_decides_access() -> None:
    from identity.model import MemoryIdentity

    base = MemoryIdentity(tenant_id="t", user_id="u", agent_id="a", session_id="s1")
    assert default_session_id(base, KEY) == default_session_id(base.with_session("s2"), KEY)
    for change in ({"user_id": "v"}, {"agent_id": "b"}, {"roles": frozenset({"admin"})}, {"tenant_id": "t2"}):
        assert default_session_id(base.model_copy(update=change), KEY) != default_session_id(base, KEY)


def test_default_session_id_is_keyed_with_the_servers_secret(tmp_path) -> None:
    """Computable from identity fields alone, it could be squatted by anyone who knows them."""
    import hashlib

    from bridge.doors.edge import default_session_key
    from identity.model import MemoryIdentity

    base = MemoryIdentity(tenant_id="t", user_id="u", agent_id="a", session_id="s1")
    unkeyed = "dflt" + hashlib.sha256(f"vb-default-session|{base.fingerprint}".encode()).hexdigest()[:32]
    key = default_session_key(tmp_path)
    assert default_session_key(tmp_path) == key and len(key) >= 16  # stable for every worker of one home
    assert (tmp_path / "default-session.key").stat().st_mode & 0o077 == 0
    assert default_session_id(base, key) != unkeyed and default_session_id(base, key) != default_session_id(base, b"x" * 32)


def test_a_client_cannot_name_an_id_in_the_default_namespace(service: Service) -> None:
    """Squatting: a member binding another user's default session to themselves would make every
    later request of that user (naming no session) a 403, forever. No client may name such an id."""
    victim = service.client(service.api_key("squat-victim"))
    attacker = service.client(service.api_key("squat-attacker"), **{"X-Session-Id": "dflt" + "0" * 32})
    assert_problem(attacker.get("/api/v1/recall", params={"query": "q"}), 403)
    assert victim.get("/api/v1/recall", params={"query": "q"}).status_code == 200


def test_narrow_and_the_gateway_refuse_the_default_namespace() -> None:
    import pytest

    from identity.errors import Forbidden
    from identity.model import MemoryIdentity
    from identity.providers.base import narrow

    who = MemoryIdentity(tenant_id="t", user_id="u", agent_id="a", session_id="s1")
    with pytest.raises(Forbidden, match="default-session"):
        narrow(who, {"session_id": "dflt0123"})
    assert narrow(who, {"session_id": "mine-1"}).session_id == "mine-1"


async def test_edge_keeps_default_session_identities_per_access_deciding_fields() -> None:
    """The edge keeps an identity in its default session per every field but the session: the
    same caller gets the same object back, any change to what decides access gets its own."""
    from bridge.doors.http.auth import EdgeAuthenticator
    from identity.model import MemoryIdentity

    auth = EdgeAuthenticator({}, session_key=KEY)
    base = MemoryIdentity(tenant_id="t", user_id="u", agent_id="a", session_id="s1")
    kept = auth._in_default_session(base)
    assert kept.session_id == default_session_id(base, KEY) and kept.fingerprint == base.fingerprint
    assert auth._in_default_session(base.with_session("s2")) is kept
    for change in ({"user_id": "v"}, {"roles": frozenset({"admin"})}, {"permission_version": "v2"}, {"task_id": "job1"}, {"department_ids": frozenset({"d"})}):
        other = auth._in_default_session(base.model_copy(update=change))
        assert other is not kept and other.session_id == default_session_id(other, KEY)
        assert all(getattr(other, k) == v for k, v in change.items())
