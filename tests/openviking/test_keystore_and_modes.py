"""api_key mode: per-principal keys in a 0600 (optionally encrypted) store, never shown anywhere."""

from __future__ import annotations

import logging
import os
import stat

import pytest

from adapters.base import SearchQuery
from adapters.openviking import FileKeyStore, KeyStoreError, OpenVikingBackend, SecretKey
from adapters.openviking.client import Auth
from adapters.openviking.errors import OVPermissionDenied, OVUnauthenticated
from adapters.scopes import ScopeKey, ScopeSet
from tests.openviking.ovhelpers import mem, unique

ALICE = ScopeKey.private("acme", "alice")
BOB = ScopeKey.private("acme", "bob")


async def test_key_store_file_is_0600_and_keys_never_appear_in_reprs_logs_or_errors(api_key_server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    url, root = api_key_server
    path = tmp_path / "keys.json"
    backend = OpenVikingBackend.connect(url, root, key_store_path=str(path), namespace=unique("ks"))
    try:
        await backend.put(ALICE, mem("alice tea"), idempotency_key="k")
        await backend.put(BOB, mem("bob tea"), idempotency_key="k")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        store = FileKeyStore(path)
        pa, pb = backend.mapper.principal(ALICE), backend.mapper.principal(BOB)
        ka, kb = await store.get(pa.account, pa.user), await store.get(pb.account, pb.user)
        assert ka is not None and kb is not None and ka != kb, "one key per scope principal"
        secrets = [ka.reveal(), kb.reveal(), root]
        # the server's own isolation backs the mapping: bob's key cannot read alice's file
        with pytest.raises((OVPermissionDenied, OVUnauthenticated)) as denied:
            await backend.client.read(Auth(kb), pa.memory_uri((await backend.list(ALICE))[0].id))
        texts = [repr(backend), repr(store), repr(ka), str(ka), repr(Auth(ka, "a", "u")), str(denied.value),
                 repr(backend.client), caplog.text]
        for text in texts:
            for secret in secrets:
                assert secret not in text, f"a key leaked into {text[:80]!r}"
        with pytest.raises(TypeError):
            import pickle
            pickle.dumps(ka)
    finally:
        await backend.drop_namespace()
        await backend.aclose()


async def test_key_store_refuses_a_group_readable_file(tmp_path):
    path = tmp_path / "keys.json"
    store = FileKeyStore(path)
    await store.put("acct", "user", SecretKey("secret-value"))
    os.chmod(path, 0o644)
    with pytest.raises(KeyStoreError, match="0600") as exc:
        await FileKeyStore(path).get("acct", "user")
    assert "secret-value" not in str(exc.value)


async def test_encrypted_key_store_holds_no_plaintext_key(tmp_path):
    from cryptography.fernet import Fernet

    fernet_key = Fernet.generate_key()
    path = tmp_path / "keys.json"
    await FileKeyStore(path, encryption_key=fernet_key).put("acct", "user", SecretKey("plaintext-key-123"))
    assert "plaintext-key-123" not in path.read_text()
    assert (await FileKeyStore(path, encryption_key=fernet_key).get("acct", "user")) == SecretKey("plaintext-key-123")
    with pytest.raises(KeyStoreError):
        await FileKeyStore(path).get("acct", "user")
    with pytest.raises(KeyStoreError):
        await FileKeyStore(path, encryption_key=Fernet.generate_key()).get("acct", "user")


async def test_lost_key_store_recovers_by_regenerating_the_user_key(api_key_server, tmp_path):
    url, root = api_key_server
    ns = unique("lost")
    first = OpenVikingBackend.connect(url, root, key_store_path=str(tmp_path / "a.json"), namespace=ns)
    second = OpenVikingBackend.connect(url, root, key_store_path=str(tmp_path / "b.json"), namespace=ns)
    try:
        stored = await first.put(ALICE, mem("durable tea memory"), idempotency_key="k")
        assert (await second.get(ALICE, stored.id)) == stored  # empty store: key regenerated with the root key
        # the first backend's key was rotated away; it recovers transparently (re-provisions once)
        assert (await first.get(ALICE, stored.id)) == stored
        hits = (await first.search(SearchQuery(ScopeSet.of(ALICE), "durable tea memory"))).hits
        assert [h.memory.id for h in hits] == [stored.id]
    finally:
        await first.drop_namespace()
        await first.aclose()
        await second.aclose()


async def test_reads_of_never_written_scopes_create_nothing(api_key_server):
    url, root = api_key_server
    backend = OpenVikingBackend.connect(url, root, namespace=unique("empty"))
    try:
        result = await backend.search(SearchQuery(ScopeSet.of(ALICE, BOB), "anything"))
        assert result.complete and result.hits == ()
        assert await backend.list(ALICE) == [] and await backend.list_scopes("acme") == []
        assert await backend.drop_namespace() == 0, "a read must not provision accounts or users"
    finally:
        await backend.aclose()


async def test_trusted_mode_sends_identity_headers_with_the_root_key(trusted_server):
    url, root = trusted_server
    backend = OpenVikingBackend.connect(url, root, mode="trusted", namespace=unique("tr"))
    try:
        stored = await backend.put(ALICE, mem("trusted tea"), idempotency_key="k")
        p = backend.mapper.principal(ALICE)
        # the same root key with BOB's identity headers is refused by the server
        bob = backend.mapper.principal(BOB)
        await backend.put(BOB, mem("bob trusted"), idempotency_key="k")
        with pytest.raises((OVPermissionDenied, OVUnauthenticated)):
            await backend.client.read(Auth(SecretKey(root), bob.account, bob.user), p.memory_uri(stored.id))
        assert (await backend.get(ALICE, stored.id)) == stored
    finally:
        await backend.drop_namespace()
        await backend.aclose()
