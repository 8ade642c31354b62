"""Session binding (seed 003, leakage test 6): fork/continue never change who is asking."""

from __future__ import annotations

import asyncio
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


def test_a_first_binding_waiting_on_another_process_lock_leaves_the_event_loop_serving(tmp_path):
    """The bridge continues a session on its event loop. Storing a first binding is a write that
    syncs to disk and, while another process holds the file's write lock, waits for it: inline it
    would stall every request of the worker. The loop keeps turning; the binding is exact after."""
    registry = SqliteSessionRegistry(tmp_path / "sessions.sqlite")
    other = sqlite3.connect(tmp_path / "sessions.sqlite", isolation_level=None)
    alice, mallory = ident(session_id="s-new"), ident(session_id="s-new", user_id="mallory")

    async def scenario() -> int:
        other.execute("BEGIN IMMEDIATE")
        bind = asyncio.ensure_future(registry.continue_session_async(alice))
        turns = 0
        for _ in range(10):
            await asyncio.sleep(0.01)
            turns += 1
        assert not bind.done()
        other.execute("COMMIT")
        assert await bind == alice
        assert await registry.continue_session_async(alice) == alice  # known: answered on the loop
        with pytest.raises(SessionIdentityMismatch):
            await registry.continue_session_async(mallory)
        forked = await registry.fork_async(alice, "s-new")
        assert forked.session_id != "s-new" and (await registry.start_session_async(alice)).session_id not in ("s-new", forked.session_id)
        return turns

    try:
        assert asyncio.run(scenario()) == 10
        assert registry.binding("acme", "s-new").user_id == "alice"
    finally:
        other.close()
        registry.close()


async def test_the_bridge_never_stores_a_binding_on_its_event_loop(tmp_path, monkeypatch):
    """Every session path of the bridge (continue on each operation, start, fork) reaches the
    repository from a worker thread, never from the thread running the loop."""
    from adapters.local import LocalBackend
    from adapters.shared.embedding import HashingEmbedder
    from bridge.facade import MemoryBridge
    from bridge.state.sqlite import SqliteState

    registry = SqliteSessionRegistry(tmp_path / "sessions.sqlite")
    on_loop: list[str] = []
    for name in ("bind_if_absent", "get"):
        original = getattr(registry.repository, name)

        def watched(*args, _name=name, _original=original):
            if asyncio._get_running_loop() is not None:
                on_loop.append(_name)
            return _original(*args)

        monkeypatch.setattr(registry.repository, name, watched)
    bridge = MemoryBridge(LocalBackend(tmp_path / "store", embedder=HashingEmbedder(64)), SqliteState(tmp_path / "state.sqlite3"), sessions=registry)
    try:
        alice = ident(session_id="s-bridge")
        await bridge.recall(alice, "anything")
        started = await bridge.start_session(alice)
        await bridge.fork_session(started)
        assert on_loop == []
        assert registry.binding("acme", "s-bridge") is not None and registry.binding("acme", started.session_id) is not None
    finally:
        await bridge.aclose()
        registry.close()
