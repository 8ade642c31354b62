"""The OpenViking per-user key store on PostgreSQL, shared by every replica (`KeyStore` protocol).

Why: in api_key mode the bridge provisions one OpenViking key per user and must find it again on
whichever replica serves that user next; a 0600 file on one machine cannot be shared.

Each key is encrypted on its own with Fernet before it leaves the process (an encryption key is
required: a database is read by DBAs, replicas and backups, unlike a 0600 file), so the table holds
ciphertext only and a row copied to another (account, user) does not decrypt there (the pair is
bound into the plaintext). Keys come out only as `SecretKey`; messages name the database and the
principal, never a key. It decides nothing about who may use which key.
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from urllib.parse import unquote, urlsplit

import psycopg

from adapters.errors import BackendMisconfigured
from adapters.openviking.client import SecretKey
from adapters.shared.pglock import advisory_hold, lock_key
from identity.storage.postgres import DEFAULT_SCHEMA, PgPool, migrate

__all__ = ["PgKeyStore", "KEYSTORE_MIGRATIONS"]

KEYSTORE_MIGRATIONS = (("openviking_keys", ("""
    CREATE TABLE openviking_keys (account text NOT NULL, "user" text NOT NULL, ciphertext text NOT NULL, PRIMARY KEY (account, "user"));
    GRANT SELECT, INSERT, UPDATE, DELETE ON openviking_keys TO {runtime};
""",)),)


class PgKeyStore:
    """`KeyStore` over PostgreSQL. `url` is the runtime role; `migrate_url` the schema owner."""

    def __init__(self, url: str, *, encryption_key: bytes | str, migrate_url: str | None = None, schema: str = DEFAULT_SCHEMA,
                 runtime_role: str | None = None, pool: PgPool | None = None) -> None:
        from cryptography.fernet import Fernet

        if not encryption_key:
            raise BackendMisconfigured("a PostgreSQL key store needs an encryption_key (Fernet)", backend="openviking")
        try:
            self._fernet = Fernet(encryption_key)
        except (ValueError, TypeError):
            raise BackendMisconfigured("encryption_key must be a urlsafe-base64 32-byte Fernet key", backend="openviking") from None
        migrate(migrate_url or url, KEYSTORE_MIGRATIONS, schema=schema, runtime_role=runtime_role or unquote(urlsplit(url).username or ""))
        self._owns = pool is None
        self.pool = pool or PgPool(url, schema=schema, max_size=2)
        # the locks' own connections: a holder never waits for one its statements need
        self._locks = PgPool(url, schema=schema, min_size=1, max_size=8, timeout=60.0)
        self._namespace = f"openviking-keys/{schema}"

    def __repr__(self) -> str:
        return f"PgKeyStore({self.pool.where!r}, encrypted=True)"

    def _seal(self, account: str, user: str, key: SecretKey) -> str:
        return self._fernet.encrypt(json.dumps([account, user, key.reveal()]).encode()).decode()

    def _open(self, account: str, user: str, ciphertext: str) -> SecretKey:
        try:
            bound_account, bound_user, value = json.loads(self._fernet.decrypt(ciphertext.encode()))
        except Exception:
            raise BackendMisconfigured(f"the key of {account}/{user} in {self.pool.where} cannot be decrypted with this encryption_key", backend="openviking") from None
        if (bound_account, bound_user) != (account, user):  # a row moved to another principal
            raise BackendMisconfigured(f"the key stored for {account}/{user} in {self.pool.where} belongs to another principal", backend="openviking")
        return SecretKey(value)

    def hold(self, account: str, user: str) -> AbstractAsyncContextManager[None]:
        """One replica at a time mints this principal's key (a second minter would regenerate it
        and revoke the first replica's); held across the call to the server."""
        return advisory_hold(self._locks, lock_key(self._namespace, account, user), "OpenViking key store")

    async def get(self, account: str, user: str) -> SecretKey | None:
        async def run(conn: psycopg.AsyncConnection) -> str | None:
            row = await (await conn.execute('SELECT ciphertext FROM openviking_keys WHERE account = %s AND "user" = %s', (account, user))).fetchone()
            return row[0] if row else None

        sealed = await self.pool.run(run, "OpenViking key store")
        return None if sealed is None else self._open(account, user, sealed)

    async def put(self, account: str, user: str, key: SecretKey) -> None:
        sealed = self._seal(account, user, key)

        async def run(conn: psycopg.AsyncConnection) -> None:
            await conn.execute(
                'INSERT INTO openviking_keys (account, "user", ciphertext) VALUES (%s, %s, %s)'
                ' ON CONFLICT (account, "user") DO UPDATE SET ciphertext = excluded.ciphertext', (account, user, sealed),
            )

        await self.pool.run(run, "OpenViking key store")

    async def remove_account(self, account: str) -> None:
        async def run(conn: psycopg.AsyncConnection) -> None:
            await conn.execute("DELETE FROM openviking_keys WHERE account = %s", (account,))

        await self.pool.run(run, "OpenViking key store")

    def close(self) -> None:
        self._locks.close()
        if self._owns:
            self.pool.close()
