"""Tenant-wide and namespace-wide operations of the OpenViking backend: listing a tenant's
scopes, erasing a subject's traces, dropping accounts and the namespace.

Why apart: these walk every user of an account and are called by the bridge's administration
code, never by a recall. What it must never do: reach beyond the tenant (or namespace) it is
given, or erase anything that does not name the subject.
"""

from __future__ import annotations

import json
from typing import Sequence

from adapters.errors import BackendError
from adapters.openviking.client import Auth
from adapters.openviking.errors import OVNotFound
from adapters.openviking.mapping import ADMIN_USER, Principal
from adapters.openviking.principals import OpenVikingPrincipalsBase
from adapters.openviking.record import HEADER_PREFIX
from adapters.scopes import ScopeKey


class OpenVikingAdministration(OpenVikingPrincipalsBase):
    """list_scopes / erase_subject_traces / drop_global / drop_namespace."""

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        account = self.mapper.account_for_tenant(tenant_id)
        try:
            users = await self._client.list_users(self._root, account)
        except OVNotFound:
            return []
        found: set[ScopeKey] = set()
        for user in users:
            name = user.get("user_id")
            if not isinstance(name, str) or name == ADMIN_USER:
                continue
            found.update(await self._scopes_of_user(account, name, tenant_id))
        return sorted(found, key=str)

    async def _scopes_of_user(self, account: str, user: str, tenant_id: str) -> list[ScopeKey]:
        """Scopes with memories under one user: read one record per directory, then re-map it
        and keep it only if it maps back to exactly this account/user(/peer)."""
        probe = Principal(ScopeKey.tenant(tenant_id), account, user)
        auth = await (self._auth_for_listing(probe))
        if auth is None:
            return []
        dirs = [(probe.memory_dir, None)]
        try:
            peers = await self._client.ls(auth, f"{probe.user_root}/peers")
            dirs += [(f"{e['uri']}/memories/vb", e["uri"].rsplit("/", 1)[-1]) for e in peers if e.get("isDir")]
        except OVNotFound:
            pass
        out: list[ScopeKey] = []
        for directory, peer in dirs:
            try:
                files = await self._client.ls(auth.with_peer(peer), directory)
            except (OVNotFound, BackendError):
                continue
            for entry in files:
                uri = entry.get("uri", "")
                if entry.get("isDir") or not uri.endswith(".md"):
                    continue
                try:
                    text = await self._client.read(auth.with_peer(peer), uri)
                    first = text.partition("\n")[0]
                    scope = ScopeKey.parse(json.loads(first[len(HEADER_PREFIX):-3])["scope"])
                    p = self.mapper.principal(scope)
                except Exception:
                    continue
                if (p.account, p.user, p.peer) == (account, user, peer) and p.memory_id_of(uri):
                    out.append(scope)
                    break
        return out

    async def _auth_for_listing(self, probe: Principal) -> Auth | None:
        if self.mode == "trusted":
            return Auth(self._root.key, probe.account, probe.user)
        key = await self._existing_key(probe)
        return None if key is None else Auth(key)

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Erasure: delete the subject's whole OpenViking user tree — private memories, what the
        server extracted from its captures, capture records, sessions and its agents' peer
        directories — including files the bridge never listed (`list_scopes` only sees bridge
        records). Returns 1 if a tree was deleted, 0 if the subject had none."""
        p = self.mapper.principal(ScopeKey.private(tenant_id, subject_user_id))
        try:
            # the namespace root itself may only be deleted by ROOT: delete each subtree instead
            children = await self._call(p, False, lambda auth: self._client.ls(auth, p.user_root))
            for child in children:
                uri, is_dir = child.get("uri"), bool(child.get("isDir"))
                if isinstance(uri, str) and uri.startswith(p.user_root + "/"):
                    await self._call(p, False, lambda auth, uri=uri, is_dir=is_dir: self._client.delete(auth, uri, recursive=is_dir, wait=True))
        except OVNotFound:
            return 0
        finally:
            self._extracted.pop(str(p.scope), None)
            self._extracted_checked.pop(str(p.scope), None)
        return 1

    # -- administration -----------------------------------------------------------------------------
    async def drop_global(self) -> None:
        await self._drop_account(self.mapper.global_account)

    async def _drop_account(self, account: str) -> None:
        try:
            await self._client.delete_account(self._root, account)
        except OVNotFound:
            pass
        await self._keys.remove_account(account)
        self._accounts.discard(account)
        self._users = {u for u in self._users if u[0] != account}

    async def drop_namespace(self) -> int:
        """Delete every account of this namespace (for tests). Returns how many were deleted."""
        accounts = await self._client.list_accounts(self._root)
        prefix = self.mapper.namespace
        names = [a.get("account_id") for a in accounts]
        mine = [n for n in names if isinstance(n, str) and (n.startswith(prefix + "-") or n == self.mapper.global_account)]
        for name in mine:
            await self._drop_account(name)
        return len(mine)
