"""Session binding (seed 003, leakage test 6): fork/continue never change who is asking."""

from __future__ import annotations

import sqlite3

import pytest

from identity import MemoryIdentity, SessionIdentityMismatch
from identity.errors import Forbidden, UnknownSession
from identity.ids import InvalidIdError, validate_id
from identity.sessions import InMemorySessionRegistry, SessionRegistry, SqliteSessionRegistry


def ident(**overrides) -> MemoryIdentity:
    fields = dict(tenant_id="acme", user_id="alice", agent_id="coder", session_id="s1", department_ids=["eng"], roles=["member"])
    fields.update(overrides)
    return MemoryIdentity(**fields)


@pytest.fixture(params=["memory", "sqlite"])
def registry(request, tmp_path):
    if request.param == "memory":
        yield InMemorySessionRegistry()
    else:
        reg = SqliteSessionRegistry(tmp_path / "sessions.sqlite")
        yield reg
        reg.close()


def test_registries_satisfy_the_protocol(registry):
    assert isinstance(registry, SessionRegistry)


def test_first_use_binds_and_same_identity_continues(registry):
    alice = ident()
    assert registry.continue_session(alice) == alice
    assert registry.continue_session(alice) == alice
    binding = registry.binding("acme", "s1")
    assert binding is not None and binding.fingerprint == alice.fingerprint and binding.user_id == "alice"


def test_other_user_cannot_continue_a_bound_session(registry):
    registry.continue_session(ident())
    with pytest.raises(SessionIdentityMismatch, match="cannot continue session 's1' in tenant 'acme': it is bound to a different identity"):
        registry.continue_session(ident(user_id="bob"))


@pytest.mark.parametrize(
    "change",
    [{"agent_id": "hr-agent"}, {"department_ids": ["eng", "hr"]}, {"roles": ["admin"]}, {"workspace_id": "beta"}, {"permission_version": "2"}],
)
def test_any_access_deciding_change_cannot_continue(registry, change):
    registry.continue_session(ident())
    with pytest.raises(SessionIdentityMismatch):
        registry.continue_session(ident(**change))


def test_mismatch_message_does_not_reveal_the_owner(registry):
    registry.continue_session(ident())
    with pytest.raises(SessionIdentityMismatch) as err:
        registry.continue_session(ident(user_id="bob"))
    assert "alice" not in str(err.value)


def test_session_ids_are_namespaced_per_tenant(registry):
    registry.continue_session(ident(tenant_id="acme"))
    other = ident(tenant_id="globex", user_id="bob")
    assert registry.continue_session(other) == other
    assert registry.binding("globex", "s1").user_id == "bob"
    assert registry.binding("acme", "s1").user_id == "alice"


def test_fork_keeps_identity_and_records_parent(registry):
    alice = registry.continue_session(ident())
    child = registry.fork(alice, "s1")
    assert child.session_id != "s1" and validate_id(child.session_id) == child.session_id and len(child.session_id) == 32
    assert child.fingerprint == alice.fingerprint
    assert child.model_dump(exclude={"session_id"}) == alice.model_dump(exclude={"session_id"})
    binding = registry.binding("acme", child.session_id)
    assert binding.parent_session_id == "s1" and binding.fingerprint == alice.fingerprint
    assert registry.continue_session(child) == child
    grandchild = registry.fork(child, child.session_id)
    assert registry.binding("acme", grandchild.session_id).parent_session_id == child.session_id


def test_forking_someone_elses_session_refused(registry):
    registry.continue_session(ident())
    with pytest.raises(SessionIdentityMismatch, match="cannot fork session 's1'"):
        registry.fork(ident(user_id="bob", session_id="b1"), "s1")


def test_fork_child_cannot_be_continued_by_another_user(registry):
    child = registry.fork(registry.continue_session(ident()), "s1")
    with pytest.raises(SessionIdentityMismatch):
        registry.continue_session(ident(user_id="bob", session_id=child.session_id))


def test_forking_an_unknown_session_refused(registry):
    with pytest.raises(UnknownSession, match="cannot fork session 'nope' in tenant 'acme': it was never started"):
        registry.fork(ident(), "nope")
    assert issubclass(UnknownSession, Forbidden)


def test_forking_across_tenants_refused(registry):
    registry.continue_session(ident(tenant_id="globex"))
    with pytest.raises(UnknownSession):
        registry.fork(ident(tenant_id="acme"), "s1")


def test_fork_parent_id_must_be_valid(registry):
    with pytest.raises(InvalidIdError, match="parent_session_id"):
        registry.fork(ident(), "../s1")


def test_start_session_creates_fresh_bound_session(registry):
    alice = ident()
    started = registry.start_session(alice)
    assert started.session_id != alice.session_id and started.fingerprint == alice.fingerprint
    assert registry.binding("acme", started.session_id).fingerprint == alice.fingerprint


def test_sqlite_bindings_survive_restart_and_use_wal(tmp_path):
    path = tmp_path / "sessions.sqlite"
    first = SqliteSessionRegistry(path)
    child = first.fork(first.continue_session(ident()), "s1")
    first.close()
    second = SqliteSessionRegistry(path)
    with pytest.raises(SessionIdentityMismatch):
        second.continue_session(ident(user_id="bob"))
    assert second.binding("acme", child.session_id).parent_session_id == "s1"
    second.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_two_registries_on_one_file_agree_on_first_binder(tmp_path):
    path = tmp_path / "sessions.sqlite"
    a, b = SqliteSessionRegistry(path), SqliteSessionRegistry(path)
    a.continue_session(ident())
    with pytest.raises(SessionIdentityMismatch):
        b.continue_session(ident(user_id="bob"))
    a.close()
    b.close()
