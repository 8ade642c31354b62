"""`VikingBackend`: the MemoryBackend protocol over hosted Viking Memory.

It stores and searches memories where it is told and never decides who may see what. Viking
does not bind ids to the credential (any key holder can name any user_id), so this adapter is
where the ScopeSet becomes the query filter, and where every hit is checked against it again:

- tenant -> collection (configured; a tenant without one is refused, GLOBAL needs its own);
- every ScopeKey -> one opaque principal sent as `user_id` (`mapping.principal_for`), agent
  scopes also carry an informational `assistant_id`;
- a record's fields (kind, status, confidence, provenance, subject, metadata, our id) travel in
  `memory_info.vb_record` (the shared envelope, `adapters.shared.envelope`); our id is deterministic
  from (scope, idempotency key) and is sent as `group_id`, so id lookups and deletes are exact
  filters; a record that does not decode is dropped and alarmed (`self.alarms`), never returned;
- the service makes event ids itself and a write is searchable only after a lag, so retries are
  made idempotent by a bridge-side write ledger (`adapters.viking.ledger`): the exact call is
  recorded before it is sent, and `reconcile_writes` removes the copies a lost answer left;
- `search` never raises for a failed backend call: the scopes land in `failed_scopes` with a
  redacted reason (one scope failing and all of them read alike); it raises only for a malformed
  query or a scope with no collection configured;
- a hit leaves only if its single user_id maps back to a queried scope, its stored scope string
  agrees, and `ScopeSet.permits(scope, id)` holds; anything else is dropped and logged.

Limits (see docs/viking.md): searches over-fetch up to 5000 candidates per call (the service's
maximum; there is no cursor), so status/kind filtering returns `limit` hits whenever they are
among the first 5000 candidates of the searched principals; writes become searchable after a lag.
Expiry: Viking's documented search filter has no field for it (ids, memory_type, start/end of
the event time only), so `expires_at` travels in the envelope and expired records are dropped
with status and kind, before a hit leaves (`Capabilities.expiry_in_query=False` says so).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from adapters.base import Capabilities, Provenance
from adapters.errors import BackendMisconfigured
from adapters.scopes import ScopeKey
from adapters.shared.cursor import CursorCodec
from adapters.shared.envelope import RecordAlarms
from adapters.viking.administration import VikingAdministration
from adapters.viking.client import VikingMemoryClient
from adapters.viking.ledger import WriteLedger
from adapters.viking.mapping import check_prefix
from adapters.viking.reads import VikingReads
from adapters.viking.rows import SERVICE_MAX_LIMIT
from adapters.viking.writes import VikingWrites
from identity.ids import validate_id

if TYPE_CHECKING:  # psycopg is an optional extra
    from adapters.viking.ledger_postgres import PgWriteLedger

__all__ = ["VikingBackend", "VikingConfig"]


@dataclass(frozen=True)
class VikingConfig:
    """Where each tenant's memories live and how names are made.

    `collections`: tenant_id -> collection (the recommended one-collection-per-tenant mapping).
    `shared_collection`: explicit opt-in for tenants without their own collection (principals are
    tenant-qualified hashes, so tenants stay apart, but one key then reaches them all).
    `global_collection`: required before the GLOBAL scope can be read or written.
    `principal_prefix`: `[A-Za-z][A-Za-z0-9]{0,15}`; a unique one per run isolates a live test.
    """

    collections: Mapping[str, str] = field(default_factory=dict)
    shared_collection: str | None = None
    global_collection: str | None = None
    event_type: str = "sys_event_v1"
    extracted_event_types: tuple[str, ...] = ("sys_event_v1",)
    principal_prefix: str = "vb"
    candidate_limit: int = SERVICE_MAX_LIMIT
    first_fetch_factor: int = 3
    ids_per_call: int = 100
    write_attempts: int = 4
    #: Seconds after which a write is surely searchable (the service documents ~15 s for
    #: extraction; direct adds are faster). Reconciliation of ambiguous writes waits this long.
    search_lag_bound: float = 60.0
    #: Ledger rows reconciled at the start of every put (bounded work per write).
    reconcile_per_write: int = 2

    def __post_init__(self) -> None:
        check_prefix(self.principal_prefix)
        if not 1 <= self.candidate_limit <= SERVICE_MAX_LIMIT:
            raise BackendMisconfigured(f"candidate_limit must be within 1..{SERVICE_MAX_LIMIT}", backend="viking")
        for tenant in self.collections:
            validate_id(tenant, "tenant_id")

    @property
    def search_types(self) -> list[str]:
        return list(dict.fromkeys((self.event_type, *self.extracted_event_types)))


class VikingBackend(VikingWrites, VikingReads, VikingAdministration):
    """`VikingBackend(client: VikingMemoryClient, config: VikingConfig, *, clock=time.time)`."""

    name = "viking"
    capabilities = Capabilities(
        server_side_extraction=True,
        memory_id_restriction=True,
        list_scopes=True,
        search_after_write_lag=True,
        supported_filters=frozenset({"start_time", "end_time"}),
        expiry_in_query=False,  # no expiry field in Viking's filter: dropped in `search` before a hit leaves
    )

    def __init__(
        self,
        client: VikingMemoryClient,
        config: VikingConfig,
        *,
        clock: Callable[[], float] = time.time,
        state_dir: str | os.PathLike[str] | None = None,
        ledger: WriteLedger | PgWriteLedger | None = None,
    ) -> None:
        """`state_dir`: where the write ledger lives (durable across restarts); None keeps it
        in memory, which makes retries idempotent within this process only. `ledger`: one made
        by the caller instead (the PostgreSQL ledger replicas share); the backend closes it."""
        self.client = client
        self.config = config
        self._clock = clock
        self._prefix = config.principal_prefix
        self._registered: set[ScopeKey] = set()
        self._captures: dict[str, tuple[str, Provenance]] = {}
        self._written: dict[str, set[str]] = defaultdict(set)  # collection -> principals written
        self.ledger = ledger if ledger is not None else WriteLedger(state_dir)
        self.alarms = RecordAlarms(self.name)
        self._cursors = CursorCodec(self.ledger.secret("cursor-key"), backend=self.name)
        self._write_locks: dict[tuple[str, str, str], asyncio.Lock] = {}

    def __repr__(self) -> str:
        return f"VikingBackend(client={self.client!r}, prefix={self._prefix!r})"


    async def aclose(self) -> None:
        try:
            await self.client.aclose()
        finally:
            self.ledger.close()


