"""API keys: issued by the admin command, stored only as salted hashes, bound to one identity,
revocable, and never a way to become anyone else."""

from __future__ import annotations

import sqlite3

import pytest

from identity.admin import main as admin_main
from identity.errors import InvalidCredential, Unauthenticated
from identity.ids import InvalidIdError
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore, BearerToken


@pytest.fixture
def store(tmp_path):
    s = ApiKeyStore(tmp_path / "keys.sqlite")
    yield s
    s.close()


@pytest.fixture
def issued(store):
    return store.issue(
        tenant_id="acme",
        user_id="svc_indexer",
        agent_id="indexer",
        department_ids=["eng"],
        workspace_id="alpha",
        roles=["writer"],
        label="nightly indexer",
    )


async def test_issued_key_authenticates_as_its_bound_identity(store, issued):
    identity = await ApiKeyProvider(store).authenticate(ApiKey(issued.key))
    assert (identity.tenant_id, identity.user_id, identity.agent_id) == ("acme", "svc_indexer", "indexer")
    assert identity.department_ids == frozenset({"eng"})
    assert identity.workspace_id == "alpha"
    assert identity.roles == frozenset({"writer"})


async def test_each_authentication_gets_a_fresh_session_but_the_same_fingerprint(store, issued):
    provider = ApiKeyProvider(store)
    a = await provider.authenticate(ApiKey(issued.key))
    b = await provider.authenticate(ApiKey(issued.key))
    assert a.session_id != b.session_id
    assert a.fingerprint == b.fingerprint


def test_key_format_and_plaintext_not_stored(store, issued):
    prefix, key_id, secret = issued.key.split("_", 2)
    assert prefix == "vbk" and key_id == issued.record.key_id and len(secret) >= 40
    with sqlite3.connect(store.path) as db:
        dump = "\n".join(db.iterdump())
        salt, digest = db.execute("SELECT salt, digest FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
    assert secret not in dump and issued.key not in dump
    assert len(salt) == 16 and len(digest) == 32


def test_repr_of_issued_key_hides_plaintext(issued):
    assert issued.key not in repr(issued)
    assert issued.key.split("_", 2)[2] not in repr(ApiKey(issued.key))


def test_store_uses_wal(store):
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_same_identity_twice_gets_different_salts(store):
    a = store.issue(tenant_id="t", user_id="u", agent_id="a")
    b = store.issue(tenant_id="t", user_id="u", agent_id="a")
    with sqlite3.connect(store.path) as db:
        salts = {row[0] for row in db.execute("SELECT salt FROM api_keys WHERE key_id IN (?,?)", (a.record.key_id, b.record.key_id))}
    assert len(salts) == 2 and a.key != b.key


async def test_wrong_secret_rejected(store, issued):
    prefix, key_id, secret = issued.key.split("_", 2)
    forged = f"{prefix}_{key_id}_{'A' * len(secret)}"
    with pytest.raises(InvalidCredential, match="unknown API key"):
        await ApiKeyProvider(store).authenticate(ApiKey(forged))


async def test_unknown_key_id_rejected(store, issued):
    _, _, secret = issued.key.split("_", 2)
    with pytest.raises(InvalidCredential, match="unknown API key"):
        await ApiKeyProvider(store).authenticate(ApiKey(f"vbk_{'0' * 16}_{secret}"))


@pytest.mark.parametrize("key", ["", "vbk", "vbk_", "sk_0123456789abcdef_x", "vbk_XYZ_secret", "vbk_0123456789abcdef_", "vbk_" + "a" * 300])
async def test_malformed_keys_rejected(store, key):
    with pytest.raises(InvalidCredential, match="malformed API key"):
        await ApiKeyProvider(store).authenticate(ApiKey(key))


async def test_revoked_key_rejected(store, issued):
    provider = ApiKeyProvider(store)
    await provider.authenticate(ApiKey(issued.key))
    assert store.revoke(issued.record.key_id) is True
    assert store.revoke(issued.record.key_id) is False  # already revoked
    with pytest.raises(InvalidCredential, match=f"API key {issued.record.key_id} has been revoked"):
        await provider.authenticate(ApiKey(issued.key))


async def test_revocation_seen_by_another_store_on_the_same_file(tmp_path):
    path = tmp_path / "keys.sqlite"
    admin, server = ApiKeyStore(path), ApiKeyStore(path)
    issued = admin.issue(tenant_id="t", user_id="u", agent_id="a")
    provider = ApiKeyProvider(server)
    await provider.authenticate(ApiKey(issued.key))
    admin.revoke(issued.record.key_id)
    with pytest.raises(InvalidCredential, match="revoked"):
        await provider.authenticate(ApiKey(issued.key))
    admin.close()
    server.close()


async def test_wrong_credential_kind_rejected(store, issued):
    with pytest.raises(Unauthenticated, match="expected a ApiKey credential, got BearerToken"):
        await ApiKeyProvider(store).authenticate(BearerToken(issued.key))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [("user_id", "a/b", "path separator"), ("tenant_id", "", "must not be empty"), ("agent_id", "a b", r"U\+0020 \(SPACE\)")],
)
def test_issue_validates_bound_ids(store, field, value, rule):
    kwargs = {"tenant_id": "t", "user_id": "u", "agent_id": "a", field: value}
    with pytest.raises(InvalidIdError, match=f"invalid {field} .*{rule}"):
        store.issue(**kwargs)


async def test_row_tampered_into_invalid_identity_fails_closed(store, issued):
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE api_keys SET user_id = '../root' WHERE key_id = ?", (issued.record.key_id,))
    with pytest.raises(InvalidCredential, match="bound to an invalid identity"):
        await ApiKeyProvider(store).authenticate(ApiKey(issued.key))


async def test_kept_identity_never_outlives_a_change_to_the_key_row(store, issued):
    """The provider keeps validated identities between requests; every request still reads the
    row, so a re-bound, tampered or revoked key is seen on the very next request."""
    provider = ApiKeyProvider(store)
    first = await provider.authenticate(ApiKey(issued.key))
    again = await provider.authenticate(ApiKey(issued.key))
    assert again.roles == first.roles and again.session_id != first.session_id  # kept identity, fresh session
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE api_keys SET roles = '[\"reader\"]', permission_version = 'v2' WHERE key_id = ?", (issued.record.key_id,))
    rebound = await provider.authenticate(ApiKey(issued.key))
    assert rebound.roles == frozenset({"reader"}) and rebound.permission_version == "v2"
    assert rebound.fingerprint != first.fingerprint
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE api_keys SET user_id = '../root' WHERE key_id = ?", (issued.record.key_id,))
    with pytest.raises(InvalidCredential, match="bound to an invalid identity"):
        await provider.authenticate(ApiKey(issued.key))
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE api_keys SET user_id = 'svc_indexer', roles = '[\"writer\"]', permission_version = NULL WHERE key_id = ?", (issued.record.key_id,))
    assert (await provider.authenticate(ApiKey(issued.key))).fingerprint == first.fingerprint
    store.revoke(issued.record.key_id)
    with pytest.raises(InvalidCredential, match="revoked"):
        await provider.authenticate(ApiKey(issued.key))


# ------------------------------------------------------------------ admin command
async def test_admin_issue_prints_key_once_then_list_and_revoke(tmp_path, capsys):
    db = str(tmp_path / "keys.sqlite")
    code = admin_main(["--db", db, "issue", "--tenant", "acme", "--user", "u1", "--agent", "coder",
                       "--department", "eng", "--department", "研发部", "--role", "admin"])
    assert code == 0
    out = capsys.readouterr()
    key = out.out.strip()
    assert key.startswith("vbk_") and "shown once" in out.err

    store = ApiKeyStore(db)
    identity = await ApiKeyProvider(store).authenticate(ApiKey(key))
    assert identity.department_ids == frozenset({"eng", "研发部"}) and identity.roles == frozenset({"admin"})

    assert admin_main(["--db", db, "list"]) == 0
    listing = capsys.readouterr().out
    assert key.split("_", 2)[2] not in listing and '"user_id": "u1"' in listing

    key_id = key.split("_", 2)[1]
    assert admin_main(["--db", db, "revoke", key_id]) == 0
    with pytest.raises(InvalidCredential, match="revoked"):
        await ApiKeyProvider(store).authenticate(ApiKey(key))
    store.close()


def test_admin_issue_rejects_bad_id(tmp_path, capsys):
    code = admin_main(["--db", str(tmp_path / "k.sqlite"), "issue", "--tenant", "acme", "--user", "../x", "--agent", "a"])
    assert code == 2
    assert "path separator" in capsys.readouterr().err


async def test_bound_identity_verifies_the_key_on_every_call_like_authenticate(store, issued):
    """`bound_identity` (what the service's edge asks when the caller names no session) skips only
    the fresh session id: the row is read, the secret checked and revocation seen on each call."""
    provider = ApiKeyProvider(store)
    bound = await provider.bound_identity(ApiKey(issued.key))
    full = await provider.authenticate(ApiKey(issued.key))
    assert bound.fingerprint == full.fingerprint and bound.principal == full.principal
    with pytest.raises(InvalidCredential):
        await provider.bound_identity(ApiKey(issued.key[:-2] + ("AA" if not issued.key.endswith("AA") else "BB")))
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE api_keys SET roles = '[\"reader\"]' WHERE key_id = ?", (issued.record.key_id,))
    assert (await provider.bound_identity(ApiKey(issued.key))).roles == frozenset({"reader"})  # re-bound: seen at once
    store.revoke(issued.record.key_id)
    with pytest.raises(InvalidCredential, match="revoked"):
        await provider.bound_identity(ApiKey(issued.key))
    with pytest.raises(Unauthenticated):
        await provider.bound_identity(BearerToken("not-a-key"))  # type: ignore[arg-type]


async def test_decoded_rows_never_outlive_a_change_made_by_another_process(tmp_path):
    """The SQLite repository keeps decoded rows keyed on the whole row as read, and answers a key
    without reading it only while nothing was committed to the file since (its commit stamp), so a
    revocation or a re-binding written through another connection (an admin command, another
    worker, a plain sqlite3 client) is seen on the very next call, however warm the cache is."""
    path = tmp_path / "keys.sqlite"
    admin, server = ApiKeyStore(path), ApiKeyStore(path)
    issued = admin.issue(tenant_id="t", user_id="u", agent_id="a", roles=["writer"])
    provider = ApiKeyProvider(server)
    for _ in range(5):
        assert (await provider.bound_identity(ApiKey(issued.key))).roles == frozenset({"writer"})
    assert server.repository.lookup(issued.record.key_id) is server.repository.lookup(issued.record.key_id)  # decoded once
    with sqlite3.connect(path) as db:
        db.execute("UPDATE api_keys SET roles = '[\"reader\"]' WHERE key_id = ?", (issued.record.key_id,))
    assert (await provider.bound_identity(ApiKey(issued.key))).roles == frozenset({"reader"})
    with sqlite3.connect(path) as db:  # back to the row as it was: the same decode, never a stale verdict
        db.execute("UPDATE api_keys SET roles = '[\"writer\"]' WHERE key_id = ?", (issued.record.key_id,))
    assert (await provider.bound_identity(ApiKey(issued.key))).roles == frozenset({"writer"})
    admin.revoke(issued.record.key_id)
    with pytest.raises(InvalidCredential, match="revoked"):
        await provider.bound_identity(ApiKey(issued.key))
    with pytest.raises(InvalidCredential, match="revoked"):
        await provider.authenticate(ApiKey(issued.key))
    with sqlite3.connect(path) as db:  # a key whose row is gone is unknown at once
        db.execute("DELETE FROM api_keys WHERE key_id = ?", (issued.record.key_id,))
    with pytest.raises(InvalidCredential, match="unknown API key"):
        await provider.bound_identity(ApiKey(issued.key))
    admin.close()
    server.close()


async def test_a_key_is_read_again_only_after_a_commit_to_the_file(tmp_path):
    """While no connection commits, a lookup reads nothing (no read transaction on the hot
    path); this store's own last-use stamp, another connection's revocation: read again."""
    path = tmp_path / "keys.sqlite"
    admin, server = ApiKeyStore(path), ApiKeyStore(path)
    issued = admin.issue(tenant_id="t", user_id="u", agent_id="a", roles=["writer"])
    repo = server.repository
    reads = 0
    real_run = repo._run

    def counted(sql, args=()):
        nonlocal reads
        reads += sql.lstrip().upper().startswith("SELECT")
        return real_run(sql, args)

    repo._run = counted  # type: ignore[method-assign]
    key_id = issued.record.key_id
    first = repo.lookup(key_id)
    assert reads == 1 and repo.lookup(key_id) is first and repo.lookup(key_id) is first
    assert reads == 1  # nothing committed since: answered from memory
    repo.touch(key_id, 123.0)  # this connection commits: read again
    assert repo.lookup(key_id).record.last_used_at == 123.0 and reads == 2
    admin.revoke(key_id)  # another connection commits
    assert repo.lookup(key_id).record.revoked_at is not None and reads == 3
    assert repo.lookup("no-such-key") is None and repo.lookup("no-such-key") is None and reads == 5  # unknown: never kept
    admin.close()
    server.close()
