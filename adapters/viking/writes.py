"""Writes of the Viking backend: put, update, delete, capture, and the write ledger's
reconciliation.

Why a ledger: the service makes event ids itself and a write becomes searchable only after a
lag, so a retried call could land twice. The exact call is recorded (`adapters.viking.ledger`)
before it is sent, and `reconcile_writes` removes the copies a lost answer left. What it must
never do: write under a principal other than the ScopeKey's own, send a write it has not
recorded first, or report a write as applied when the service may not have applied it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from typing import Any, Awaitable, Callable, Mapping, Sequence

from adapters.base import CaptureReceipt, ConversationMessage, MemoryPatch, NewMemory, Provenance, StoredMemory, require_scope
from adapters.errors import BackendError, CorruptRecord, InvalidRequest, BackendNotFound, RetryLater, BackendUnavailable
from adapters.scopes import ScopeKey
from adapters.shared.envelope import memory_id_for
from adapters.shared.http import certainly_not_applied
from adapters.viking.ledger import LedgerRow
from adapters.viking.mapping import RECORD_FIELD, backend_session_id, decode_record, encode_new, encode_record, scope_marker_id
from adapters.viking.rows import SERVICE_MAX_LIMIT, VikingRowsBase, EXTRACTED_ID, OUR_ID, all_copies, registry_marker_of

#: The same logger as the rest of this backend, whichever concern logs.
log = logging.getLogger("adapters.viking")


MAX_MESSAGES = 1000


class VikingWrites(VikingRowsBase):
    """put / update / delete / capture, made idempotent by the write ledger."""

    # -- writes ---------------------------------------------------------------------------
    def _write_lock(self, collection: str, principal: str, group_id: str) -> asyncio.Lock:
        return self._write_locks.setdefault((collection, principal, group_id), asyncio.Lock())

    async def _idempotent_add(
        self,
        collection: str,
        *,
        user_id: str,
        group_id: str,
        info: Mapping[str, Any],
        exists: Callable[[], Awaitable[str | None]],
        assistant_id: str | None = None,
        time_ms: int | None = None,
    ) -> tuple[bool, Mapping[str, Any]]:
        """Add one event unless it is already there; (created by this call, memory_info stored).

        Looks up first (`exists` answers the viking id of a searchable copy), then asks the
        write ledger (an add acknowledged earlier but not yet searchable), then records the call
        in the ledger BEFORE sending it, so every attempt — here or in a caller's retry — sends
        the same record; an ambiguous failure is marked for `reconcile_writes`, which removes
        the extra copies once the search lag has passed (see `adapters.viking.ledger`)."""
        policy = self.client.retry
        attempts = max(1, self.config.write_attempts)
        self._written[collection].add(user_id)
        async with self._write_lock(collection, user_id, group_id), self.ledger.hold(collection, user_id, group_id):
            found = await exists()
            row = self.ledger.get(collection, user_id, group_id)
            if found is not None:
                if row is not None and row.event_id is None:
                    self.ledger.won(collection, user_id, group_id, found, self._clock())
                return False, info
            if row is not None and row.event_id is not None:
                return False, row.call["memory_info"]  # acknowledged earlier, not yet searchable
            if row is not None:  # an earlier call (or a process that died mid-call) never got an answer
                self.ledger.uncertain(collection, user_id, group_id, self._clock())
            call = {"memory_info": dict(info), "assistant_id": assistant_id, "time_ms": time_ms}
            call = self.ledger.begin(collection, user_id, group_id, call, self._clock()).call
            for attempt in range(1, attempts + 1):
                if attempt > 1:
                    found = await exists()
                    if found is not None:  # an earlier attempt of this call landed after all
                        self.ledger.won(collection, user_id, group_id, found, self._clock())
                        return True, call["memory_info"]
                try:
                    event_id = await self.client.event_add(
                        collection,
                        event_type=self.config.event_type,
                        memory_info=call["memory_info"],
                        user_id=user_id,
                        assistant_id=call["assistant_id"],
                        group_id=group_id,
                        time_ms=call["time_ms"],
                    )
                except RetryLater:
                    raise
                except BackendUnavailable as exc:
                    if not certainly_not_applied(exc):
                        self.ledger.uncertain(collection, user_id, group_id, self._clock())
                    if attempt >= attempts:
                        raise
                    await policy.sleep(policy.wait_for(attempt, exc))
                    continue
                self.ledger.won(collection, user_id, group_id, event_id, self._clock())
                return True, call["memory_info"]
        raise AssertionError("unreachable")  # pragma: no cover

    async def reconcile_writes(self, *, limit: int = 100) -> int:
        """Remove the physical copies that ambiguous writes left behind; returns how many.

        Only ledger rows whose last ambiguity is older than `search_lag_bound` are looked at
        (every copy is searchable by then). For each: every event of the same principal with the
        same group id but the winner is deleted; with no acknowledged winner the lowest-id copy is
        adopted; with no copy at all the row is dropped (the write never landed)."""
        removed = 0
        for row in self.ledger.due(self._clock() - self.config.search_lag_bound, limit):
            async with self._write_lock(row.collection, row.principal, row.group_id), self.ledger.hold(row.collection, row.principal, row.group_id):  # not while a put of it runs
                current = self.ledger.get(row.collection, row.principal, row.group_id)
                if current is not None and current.touched_at <= self._clock() - self.config.search_lag_bound:
                    removed += await self._reconcile(current)
        return removed

    async def _reconcile(self, row: LedgerRow) -> int:
        rows = await self.client.search(
            row.collection,
            filter={"user_id": [row.principal], "group_id": [row.group_id], "memory_type": self.config.search_types},
            query=None,
            limit=SERVICE_MAX_LIMIT,
            kind="event",
        )
        copies = sorted(
            str(r["id"])
            for r in rows
            if isinstance(r.get("id"), str) and r.get("group_id") == row.group_id and r.get("user_id") in ([row.principal], row.principal)
        )
        if not copies:
            if row.event_id is not None:  # acknowledged, yet gone after the lag: deleted elsewhere (or the bound is too short)
                log.warning("viking ledger: an acknowledged write is not searchable %.0fs later; forgetting its ledger row", self.config.search_lag_bound)
            self.ledger.forget(row.collection, row.principal, row.group_id)
            return 0
        # The acknowledged copy wins; without one, the copy with the lowest id is adopted (every copy holds the same record). When the winner is
        # not among the copies (deleted elsewhere, or still lagging) every other copy goes too: it
        # is either a duplicate of the winner or a leftover of a memory that was forgotten.
        winner = row.event_id if row.event_id is not None else copies[0]
        removed = 0
        for event_id in copies:
            if event_id == winner:
                continue
            try:
                await self.client.event_delete(row.collection, event_id)
            except BackendNotFound:
                pass
            removed += 1
        self.ledger.settle(row.collection, row.principal, row.group_id, winner)
        return removed

    async def _register(self, scope: ScopeKey, collection: str, *, marker: str = "scope", group_id: str | None = None, extra: Mapping[str, Any] | None = None) -> None:
        registry = self._registry_of(scope)
        gid = group_id or scope_marker_id(scope)
        envelope = {"v": 1, "marker": marker, "scope": str(scope), **(extra or {})}
        info = {"summary": f"viking-bridge {marker} record", RECORD_FIELD: json.dumps(envelope, ensure_ascii=False, sort_keys=True)}

        async def exists() -> str | None:
            rows = await self._search_rows(collection, [registry], query=None, limit=10, extra={"group_id": gid})
            found = [r for r in rows if (registry_marker_of(r) or {}).get("scope") == str(scope) and isinstance(r.get("id"), str)]
            return found[0]["id"] if found else None

        await self._idempotent_add(collection, user_id=registry, group_id=gid, info=info, exists=exists)

    async def _ensure_registered(self, scope: ScopeKey, collection: str) -> None:
        if scope in self._registered:
            return
        await self._register(scope, collection)
        self._registered.add(scope)

    async def put(self, scope: ScopeKey, memory: NewMemory, *, idempotency_key: str) -> StoredMemory:
        """Store `memory`; the same key in the same scope returns the first record (`created`
        False), also while that record is not yet searchable (the write ledger knows it)."""
        scope = require_scope(scope)
        if not isinstance(memory, NewMemory):
            raise InvalidRequest("put needs a NewMemory", backend=self.name, scope=scope)
        if not isinstance(idempotency_key, str) or not idempotency_key:
            raise InvalidRequest("idempotency_key must be a non-empty string", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        memory_id = memory_id_for(scope, idempotency_key)
        await self._reconcile_some()
        await self._ensure_registered(scope, collection)
        stored, info = encode_new(memory_id, scope, memory, now=self._clock())
        first: list[StoredMemory] = []

        async def exists() -> str | None:
            rows = await self._by_id(scope, memory_id)
            if rows:
                first.append(rows[0].memory)
                return rows[0].viking_id
            return None

        created, sent = await self._idempotent_add(
            collection,
            user_id=self.principal(scope),
            group_id=memory_id,
            info=info,
            exists=exists,
            assistant_id=self._assistant_for(scope, None),
            time_ms=int(stored.created_at * 1000),
        )
        if first and not created:
            return replace(first[-1], created=False)
        if sent is not info:
            try:
                stored = decode_record(sent, scope, memory_id)  # the record the first attempt sent
            except CorruptRecord as exc:
                self.alarms.raise_alarm(scope, f"write ledger: {exc}")
        return replace(stored, created=created)

    async def _reconcile_some(self) -> None:
        """Bounded reconciliation on the write path; a failure here never fails the write."""
        if self.config.reconcile_per_write <= 0:
            return
        try:
            await self.reconcile_writes(limit=self.config.reconcile_per_write)
        except BackendError as exc:
            log.warning("viking ledger: reconciliation postponed (%s)", type(exc).__name__)

    async def update(self, scope: ScopeKey, memory_id: str, patch: MemoryPatch) -> StoredMemory:
        scope = require_scope(scope)
        if patch.confidence is not None and not 0.0 <= patch.confidence <= 1.0:
            raise InvalidRequest("confidence must be within [0, 1]", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        rows = await self._by_id(scope, memory_id) if isinstance(memory_id, str) else []
        if not rows:
            raise BackendNotFound(f"no memory {memory_id!r} in this scope", backend=self.name, scope=scope)
        updated = patch.apply(rows[0].memory, now=self._clock())
        info = encode_record(updated)
        for row in all_copies(rows):
            await self.client.event_update(collection, row.viking_id, info)
        return updated

    async def delete(self, scope: ScopeKey, memory_id: str) -> bool:
        scope = require_scope(scope)
        collection = self.collection_for(scope)
        if not isinstance(memory_id, str):
            return False
        if OUR_ID.match(memory_id):
            rows = await self._by_id(scope, memory_id)
            # Scoped by principal AND our id: removes every copy, never another scope's rows.
            data = await self.client.event_batch_delete(
                collection, {"user_id": self.principal(scope), "group_id": memory_id, "event_type": self.config.event_type}
            )
            count = data.get("deleted_count")
            self.ledger.forget(collection, self.principal(scope), memory_id)  # a later put with the key writes anew
            return bool(rows) or (isinstance(count, int) and count > 0)
        if EXTRACTED_ID.match(memory_id):
            rows = await self._by_id(scope, memory_id)
            for row in rows:
                try:
                    await self.client.event_delete(collection, row.viking_id)
                except BackendNotFound:
                    pass
            return bool(rows)
        return False

    async def capture(
        self, scope: ScopeKey, messages: Sequence[ConversationMessage], *, session_key: str, provenance: Provenance
    ) -> CaptureReceipt:
        """session/add into `scope`'s principal. Reusing the same (scope, session_key) overwrites
        that session's extracted events — the intended replay semantics; nobody else's."""
        scope = require_scope(scope)
        if not messages:
            raise InvalidRequest("capture needs at least one message", backend=self.name, scope=scope)
        if len(messages) > MAX_MESSAGES:
            raise InvalidRequest(f"a capture holds at most {MAX_MESSAGES} messages, got {len(messages)}", backend=self.name, scope=scope)
        if not isinstance(session_key, str) or not session_key:
            raise InvalidRequest("session_key must be a non-empty string", backend=self.name, scope=scope)
        collection = self.collection_for(scope)
        sid = backend_session_id(scope, session_key, self._prefix)
        await self._ensure_registered(scope, collection)
        await self._register(scope, collection, marker="capture", group_id=sid, extra={"provenance": provenance.to_dict()})
        self._captures[sid] = (str(scope), provenance)
        now_ms = int(self._clock() * 1000)
        payload = []
        for m in messages:
            if m.role not in ("user", "assistant", "system"):
                raise InvalidRequest(f"message role must be user|assistant|system, got {m.role!r}", backend=self.name, scope=scope)
            payload.append({"role": m.role, "content": m.content, "time": int(m.time * 1000) if m.time is not None else now_ms})
        principal = self.principal(scope)
        metadata: dict[str, Any] = {"default_user_id": principal, "time": now_ms}
        assistant = self._assistant_for(scope, provenance.author_agent_id)
        if assistant:
            metadata["default_assistant_id"] = assistant
        self._written[collection].add(principal)
        data = await self.client.session_add(collection, sid, payload, metadata)
        return CaptureReceipt(backend_session_id=sid, accepted_messages=len(payload), task_id=data.get("task_id"))
