"""The ground floor of `OpenVikingBackend`: accounts and users on the server, their
credentials, and the one way a record is read or written under a principal.

Why a base class of its own: every concern (records, search, extraction, administration) talks
to the server as the principal a ScopeKey maps to, and must do so through the same credential
lookup and the same record codec, so no path can write under the wrong user or read a record
that names another place. What it must never do: create a user or key for a principal nobody
asked for, share one principal between two ScopeKeys, or let a secret key reach a message or a
log line.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from adapters.base import Status, StoredMemory
from adapters.errors import CorruptRecord, BackendNotFound
from adapters.openviking.client import Auth, SecretKey
from adapters.openviking.errors import OVConflict, OVNotFound, OVUnauthenticated
from adapters.openviking.keystore import FileKeyStore
from adapters.openviking.mapping import ADMIN_USER, Principal
from adapters.openviking.record import decode_record, encode_record


def status_tag(status: Status) -> str:
    """The server-side search tag of a record's status (OpenViking tags are lowercased k=v)."""
    return f"vbs={status.value}"


def kind_tag(kind: str) -> str:
    """Kinds are free strings; the tag holds a hash so case and '=' can never collide."""
    return "vbk=" + hashlib.sha256(kind.encode()).hexdigest()[:24]


def record_tags(memory: StoredMemory) -> list[str]:
    return [status_tag(memory.status), kind_tag(memory.kind)]


class OpenVikingPrincipalsBase:
    """Principals, their credentials, and the record read/write every concern goes through."""

    # -- principals and credentials -------------------------------------------------------
    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def _ensure_account(self, account: str) -> None:
        if account in self._accounts:
            return
        async with self._lock("account:" + account):
            if account in self._accounts:
                return
            try:
                await self._client.create_account(self._root, account, ADMIN_USER)  # the admin key is discarded
            except OVConflict:
                pass
            self._accounts.add(account)

    async def _ensure_user(self, p: Principal) -> SecretKey | None:
        """Create the principal's user if needed; in api_key mode return (and store) its key."""
        await self._ensure_account(p.account)
        async with self._lock(f"user:{p.account}/{p.user}"), self._keys.hold(p.account, p.user):
            if self.mode == "api_key":
                key = await self._keys.get(p.account, p.user)
                if key is not None:
                    return key
            elif (p.account, p.user) in self._users:
                return None
            try:
                result = await self._client.create_user(self._root, p.account, p.user, "user")
            except OVConflict:
                result = await self._client.regenerate_key(self._root, p.account, p.user) if self.mode == "api_key" else {}
            self._users.add((p.account, p.user))
            if self.mode == "api_key":
                key = SecretKey(result["user_key"])
                await self._keys.put(p.account, p.user, key)
                return key
            return None

    async def _existing_key(self, p: Principal) -> SecretKey | None:
        """api_key mode, read path: the stored key, or a regenerated one if the user exists; None if not."""
        key = await self._keys.get(p.account, p.user)
        if key is not None:
            return key
        try:
            users = await self._client.list_users(self._root, p.account)
        except OVNotFound:
            return None
        if not any(u.get("user_id") == p.user for u in users):
            return None
        return await self._ensure_user(p)

    async def _auth(self, p: Principal, *, create: bool) -> Auth | None:
        if self.mode == "trusted":
            if create:
                await self._ensure_user(p)
            return Auth(self._root.key, p.account, p.user, p.peer)
        key = await (self._ensure_user(p) if create else self._existing_key(p))
        return None if key is None else Auth(key, actor_peer=p.peer)

    async def _call(self, p: Principal, create: bool, fn: Any) -> Any:
        """Run `fn(auth)`; on a rejected stored key (rotated elsewhere), re-provision once."""
        auth = await self._auth(p, create=create)
        if auth is None:
            raise OVNotFound("principal not provisioned", backend=self.name, scope=p.scope)
        try:
            return await fn(auth)
        except OVUnauthenticated:
            if self.mode != "api_key":
                raise
            if isinstance(self._keys, FileKeyStore):
                await self._keys.reload()
            async with self._lock(f"user:{p.account}/{p.user}"), self._keys.hold(p.account, p.user):
                fresh = await self._keys.get(p.account, p.user)  # another replica may have rotated it already
                if fresh is None or fresh == auth.key:
                    result = await self._client.regenerate_key(self._root, p.account, p.user)
                    fresh = SecretKey(result["user_key"])
                    await self._keys.put(p.account, p.user, fresh)
            return await fn(Auth(fresh, actor_peer=p.peer))

    # -- records ------------------------------------------------------------------------------
    async def _read_record(self, p: Principal, memory_id: str, *, create: bool = False) -> StoredMemory:
        uri = p.memory_uri(memory_id)
        try:
            text = await self._call(p, create, lambda auth: self._client.read(auth, uri))
        except OVNotFound:
            raise BackendNotFound(f"no memory {memory_id}", backend=self.name, scope=p.scope) from None
        try:
            return decode_record(text, expected_scope=p.scope, expected_id=memory_id)
        except CorruptRecord as exc:
            self.alarms.raise_alarm(p.scope, f"{memory_id}: {exc}")  # dropped, never returned
            raise BackendNotFound(f"memory {memory_id} is not a valid record here ({exc})", backend=self.name, scope=p.scope) from None

    async def _write_record(self, p: Principal, memory: StoredMemory) -> None:
        uri = p.memory_uri(memory.id)
        body = encode_record(memory)
        tags = record_tags(memory)
        await self._call(p, True, lambda auth: self._client.write(auth, uri, body, mode="replace", wait=True, tags=tags))
