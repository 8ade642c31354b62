"""Identity state that lives only in this process: session bindings and API keys in dicts.

For tests, single-process development and embedded use; everything is forgotten on exit. The
classes keep the same integrity rules as the durable stores (`identity.state.protocols`: bind
once, a key id is never reused, a revocation is final) under one lock each, so code tested
against them behaves the same on SQLite or PostgreSQL. They decide nothing about who may do
what; that is `identity.sessions`' and `identity.providers.api_keys`' job.
"""

from __future__ import annotations

import dataclasses
import threading

from identity.errors import Conflict
from identity.state.protocols import ApiKeyRecord, SessionBinding, StoredApiKey

__all__ = ["InMemoryApiKeyRepository", "InMemorySessionRepository"]


class InMemorySessionRepository:
    """For tests and single-process development; forgets everything on exit."""

    def __init__(self) -> None:
        self._bindings: dict[tuple[str, str], SessionBinding] = {}
        self._lock = threading.Lock()

    def bind_if_absent(self, binding: SessionBinding) -> SessionBinding:
        with self._lock:
            return self._bindings.setdefault((binding.tenant_id, binding.session_id), binding)

    def get(self, tenant_id: str, session_id: str) -> SessionBinding | None:
        with self._lock:
            return self._bindings.get((tenant_id, session_id))

    def close(self) -> None:
        return None


class InMemoryApiKeyRepository:
    """For tests and embedded use; forgets every key on exit."""

    def __init__(self) -> None:
        self._keys: dict[str, StoredApiKey] = {}
        self._lock = threading.Lock()

    def insert(self, key: StoredApiKey) -> None:
        with self._lock:
            if key.record.key_id in self._keys:
                raise Conflict(f"API key id {key.record.key_id} already exists")
            self._keys[key.record.key_id] = key

    def lookup(self, key_id: str) -> StoredApiKey | None:
        with self._lock:
            return self._keys.get(key_id)

    async def lookup_async(self, key_id: str) -> StoredApiKey | None:
        return self.lookup(key_id)  # a dict read: nothing to wait for

    def revoke(self, key_id: str, at: float) -> bool:
        with self._lock:
            stored = self._keys.get(key_id)
            if stored is None or stored.record.revoked:
                return False
            record = dataclasses.replace(stored.record, revoked_at=at)
            self._keys[key_id] = dataclasses.replace(stored, record=record)
            return True

    def touch(self, key_id: str, at: float) -> None:
        with self._lock:
            stored = self._keys.get(key_id)
            if stored is not None:
                self._keys[key_id] = dataclasses.replace(stored, record=dataclasses.replace(stored.record, last_used_at=at))

    def records(self, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        with self._lock:
            found = [k.record for k in self._keys.values() if tenant_id is None or k.record.tenant_id == tenant_id]
        return sorted(found, key=lambda r: r.created_at)

    def close(self) -> None:
        return None
