"""No API key id existence oracle: an unknown key id costs exactly the
work of a known id with a wrong secret. Proven by counting operations, not by timing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from identity.errors import InvalidCredential
from identity.providers import api_keys
from identity.providers.api_keys import ApiKeyStore


@pytest.fixture(params=["sqlite", "memory"])
def store(request, tmp_path: Path) -> ApiKeyStore:
    made = ApiKeyStore(tmp_path / "keys.sqlite3") if request.param == "sqlite" else ApiKeyStore.in_memory()
    yield made
    made.close()


def _counted(store: ApiKeyStore, monkeypatch: pytest.MonkeyPatch) -> Counter:
    calls: Counter = Counter()
    real_digest, real_compare, real_lookup = api_keys._digest, api_keys._compare, store.repository.lookup

    def digest(salt: bytes, secret: str) -> bytes:
        calls["hmac"] += 1
        return real_digest(salt, secret)

    def compare(a: bytes, b: bytes) -> bool:
        calls["compare"] += 1
        calls["compared_bytes"] += len(b)
        return real_compare(a, b)

    def lookup(key_id: str):
        calls["lookup"] += 1
        return real_lookup(key_id)

    monkeypatch.setattr(api_keys, "_digest", digest)
    monkeypatch.setattr(api_keys, "_compare", compare)
    monkeypatch.setattr(store.repository, "lookup", lookup)
    return calls


def _work(store: ApiKeyStore, key: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, str]:
    with monkeypatch.context() as m:
        calls = _counted(store, m)
        with pytest.raises(InvalidCredential) as err:
            store.verify(key)
    return calls, str(err.value)


def test_unknown_key_id_cannot_be_told_from_a_wrong_secret_by_the_work_done(store, monkeypatch):
    issued = store.issue(tenant_id="acme", user_id="alice", agent_id="cli")
    key_id = issued.record.key_id
    wrong_secret = f"vbk_{key_id}_{'A' * 43}"
    unknown_id = f"vbk_{'f' * 16 if key_id != 'f' * 16 else 'e' * 16}_{'A' * 43}"

    known_work, known_message = _work(store, wrong_secret, monkeypatch)
    unknown_work, unknown_message = _work(store, unknown_id, monkeypatch)
    assert known_work == unknown_work, (known_work, unknown_work)
    assert known_work["hmac"] == 1 and known_work["compare"] == 1 and known_work["lookup"] == 1
    assert known_message == unknown_message == "unknown API key"


def test_dummy_verifier_is_computed_once_not_per_request(store, monkeypatch):
    with monkeypatch.context() as m:
        calls = _counted(store, m)
        for i in range(5):
            with pytest.raises(InvalidCredential):
                store.verify(f"vbk_{i:016x}_{'B' * 43}")
    assert calls["hmac"] == 5  # one per request: the dummy digest itself was made at start-up
