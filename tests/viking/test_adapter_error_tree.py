"""One error tree, adapter side (a caller catches one base class, so an orphan error escapes every handler): the adapters' former orphans are members of the one tree, and
and one envelope with one failure contract (dropped + alarmed, never returned).

(Kept with the Viking tests because that suite runs fast and owns the simulator; the classes
checked here belong to every adapter.)"""

from __future__ import annotations

import json

import httpx
import pytest

from adapters.base import SearchQuery, StoredMemory
from adapters.shared.embedding import EmbeddingError, HashingEmbedder, OpenAICompatibleEmbedder
from adapters.shared.envelope import dump_envelope, from_envelope, memory_id_for, to_envelope
from adapters.errors import BackendError, BackendConflict, CorruptRecord, EmptyScopeError, WrongContext
from adapters.openviking.keystore import FileKeyStore, KeyStoreError
from adapters.openviking.record import RecordError, decode_record, encode_record
from adapters.scopes import EmptyScopeSetError, ScopeEntry, ScopeKey, ScopeSet
from adapters.sync import LoopRunner
from adapters.viking import VikingBackend
from adapters.viking import mapping as viking_mapping
from contract_tests.viking_simulator import VikingSimulator
from identity.errors import ConfigurationError, CorruptStorage, InvalidInput, Unavailable, VikingBridgeError
from tests.viking.vikingkit import mem

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")


def test_the_two_empty_scope_errors_are_one_class() -> None:
    assert EmptyScopeSetError is EmptyScopeError
    with pytest.raises(EmptyScopeError):
        ScopeSet(())
    with pytest.raises(EmptyScopeError):
        ScopeEntry(ALICE, memory_ids=frozenset())
    assert issubclass(EmptyScopeError, InvalidInput) and issubclass(EmptyScopeError, ValueError)


async def test_embedding_failures_are_members_of_the_tree() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="no")

    down = OpenAICompatibleEmbedder("http://e.test/v1", "m", 2, transport=httpx.MockTransport(broken))
    with pytest.raises(EmbeddingError) as info:
        await down.embed(["a"])
    assert isinstance(info.value, Unavailable) and isinstance(info.value, BackendError)
    with pytest.raises(EmbeddingError) as bad:
        HashingEmbedder(dimension=2)
    assert isinstance(bad.value, ConfigurationError)


async def test_key_store_errors_are_configuration_errors(tmp_path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{}")
    path.chmod(0o644)
    with pytest.raises(KeyStoreError) as info:
        await FileKeyStore(path).get("a", "u")
    assert isinstance(info.value, ConfigurationError) and isinstance(info.value, VikingBridgeError)


def test_a_principal_collision_is_a_conflict_not_a_runtime_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(viking_mapping, "principal_for", lambda scope, prefix="vb": "vbu_same_0")
    with pytest.raises(BackendConflict):
        viking_mapping.PrincipalMap([ALICE, BOB], "vb")


async def test_the_sync_facade_inside_a_loop_is_a_member_and_still_a_runtime_error() -> None:
    with pytest.raises(WrongContext) as info:
        LoopRunner.ensure_no_running_loop()
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ConfigurationError)


def _stored() -> StoredMemory:
    return StoredMemory.from_new(memory_id_for(ALICE, "k"), ALICE, mem("alice likes tea"), now=1.0)


def test_one_envelope_round_trips_for_both_framings() -> None:
    stored = _stored()
    assert from_envelope(to_envelope(stored), scope=ALICE, memory_id=stored.id, content=stored.content) == stored
    assert decode_record(encode_record(stored), expected_scope=ALICE, expected_id=stored.id) == stored
    assert viking_mapping.decode_record(viking_mapping.encode_record(stored), ALICE, stored.id) == stored
    assert RecordError is CorruptRecord and issubclass(CorruptRecord, CorruptStorage)


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: e.update(scope="acme/user/bob"),
        lambda e: e.update(id="m" + "0" * 32),
        lambda e: e.update(v=2),
        lambda e: e.update(status="exploded"),
        lambda e: e.update(confidence=float("nan")),
        lambda e: e.update(confidence=7),
        lambda e: e.update(metadata={"nested": {"x": 1}}),
        lambda e: e.pop("provenance"),
        lambda e: e.update(marker="scope"),
    ],
    ids=["other-scope", "other-id", "version", "status", "nan", "confidence", "nested-metadata", "no-provenance", "marker"],
)
def test_a_record_that_does_not_decode_raises_corrupt_record(damage) -> None:
    stored = _stored()
    env = to_envelope(stored)
    damage(env)
    with pytest.raises(CorruptRecord):
        from_envelope(env, scope=ALICE, memory_id=stored.id, content=stored.content)


async def test_a_record_that_does_not_decode_is_dropped_and_alarmed_never_returned(sim: VikingSimulator, backend: VikingBackend) -> None:
    good = await backend.put(ALICE, mem("alice likes tea"), idempotency_key="k1")
    forged = to_envelope(StoredMemory.from_new(memory_id_for(BOB, "x"), BOB, mem("bob's tea secret"), now=2.0))
    broken = dict(forged, scope=str(ALICE), status="exploded")
    for env in (forged, broken):  # under alice's principal: one names bob's scope, one is malformed
        await backend.client.event_add(
            "bridge_tenants", event_type="sys_event_v1", user_id=backend.principal(ALICE), group_id=env["id"],
            memory_info={"summary": "tea " + env["scope"], viking_mapping.RECORD_FIELD: dump_envelope(env)},
        )
    result = await backend.search(SearchQuery(ScopeSet.of(ALICE), "tea"))
    assert [h.memory.id for h in result.hits] == [good.id]
    assert backend.alarms.count == 2
    assert all("tea" not in reason for _, reason in backend.alarms.recent), "alarms never carry content"
    assert json.loads(json.dumps([list(r) for r in backend.alarms.recent]))  # plain text, loggable
