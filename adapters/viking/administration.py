"""Tenant-wide operations of the Viking backend: listing a tenant's scopes, erasing a
subject's traces, dropping the namespace.

Why apart: these walk the scope registry of a whole tenant (or the whole namespace) and are
called by the bridge's administration code, never by a recall. What it must never do: reach
beyond the tenant (or namespace prefix) it is given, or erase rows that do not name the
subject.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from adapters.errors import BackendError, BackendNotFound
from adapters.scopes import ScopeKey, Visibility
from adapters.viking.mapping import PrincipalMap
from adapters.viking.rows import SERVICE_MAX_LIMIT, VikingRowsBase, chunks, registry_marker_of
from identity.ids import validate_id

#: The same logger as the rest of this backend, whichever concern logs.
log = logging.getLogger("adapters.viking")


class VikingAdministration(VikingRowsBase):
    """list_scopes / erase_subject_traces / drop_namespace."""

    async def _registry_markers(self, tenant_id: str) -> tuple[str, list[tuple[dict[str, Any], dict[str, Any], ScopeKey]]]:
        """The tenant's registry rows (scope markers, capture records) as (row, envelope, scope),
        keeping only rows of the registry principal whose scope parses into this tenant."""
        validate_id(tenant_id, "tenant_id")
        tenant_scope = ScopeKey.tenant(tenant_id)
        collection = self.collection_for(tenant_scope)
        registry = self._registry_of(tenant_scope)
        rows = await self.client.search(
            collection, filter={"user_id": [registry], "memory_type": self.config.search_types}, query=None, limit=SERVICE_MAX_LIMIT, kind="event"
        )
        out = []
        for r in rows:
            env = registry_marker_of(r)
            if not env or r.get("user_id") not in ([registry], registry):
                continue
            try:
                key = ScopeKey.parse(str(env.get("scope", "")))
            except (ValueError, TypeError):
                continue
            if key.tenant_id == tenant_id and key.visibility is not Visibility.GLOBAL:
                out.append((r, env, key))
        return collection, out

    async def list_scopes(self, tenant_id: str) -> Sequence[ScopeKey]:
        collection, markers = await self._registry_markers(tenant_id)
        candidates = {key for _, env, key in markers if env.get("marker") == "scope"}
        present: set[ScopeKey] = set()
        for chunk in chunks(sorted(candidates), self.config.ids_per_call):
            remaining = list(chunk)
            while remaining:
                pmap = PrincipalMap(remaining, self._prefix)
                found = await self._search_rows(collection, pmap.principals, query=None, limit=SERVICE_MAX_LIMIT)
                seen = {s for r in found if (s := self._scope_of_row(r, pmap)) is not None}
                present |= seen
                if len(found) < SERVICE_MAX_LIMIT or not seen:
                    break
                remaining = [k for k in remaining if k not in seen]
        return sorted(present, key=str)

    async def erase_subject_traces(self, tenant_id: str, subject_user_id: str) -> int:
        """Erasure: drop the registry rows naming the subject — capture records it authored (they
        hold its session id) and the scope markers of its private and agent scopes. The raw
        conversations the service keeps for session/add cannot be deleted through the API."""
        validate_id(subject_user_id, "subject_user_id")
        collection, markers = await self._registry_markers(tenant_id)
        erased = 0
        for r, env, key in markers:
            if not isinstance(r.get("id"), str):
                continue
            owned = key.personal_user_id == subject_user_id  # private, agent-owned and task scopes
            authored = env.get("marker") == "capture" and (env.get("provenance") or {}).get("author_user_id") == subject_user_id
            if owned or authored:
                try:
                    await self.client.event_delete(collection, r["id"])
                except BackendNotFound:
                    pass
                erased += 1
                if isinstance(r.get("group_id"), str):
                    self.ledger.forget(collection, self._registry_of(key), r["group_id"])
                self._registered.discard(key)
                if env.get("marker") == "capture":
                    self._captures.pop(str(r.get("group_id")), None)
        return erased

    # -- lifecycle ------------------------------------------------------------------------
    async def drop_namespace(self) -> None:
        """Delete every row this backend instance wrote (live contract runs use a unique prefix)."""
        for collection, principals in list(self._written.items()):
            for principal in sorted(principals):
                try:
                    await self.client.event_batch_delete(collection, {"user_id": principal})
                    self.ledger.forget(collection, principal)
                except BackendError as exc:
                    log.warning("viking cleanup of one principal failed: %s", type(exc).__name__)
        self._written.clear()
        self._registered.clear()
