"""The bridge's own state on PostgreSQL, shared by N replicas: audit log (with write intents and
the store marker), grants, manifests — and, over the same pool, the identity state (sessions,
API keys, nonces; `identity.state.postgres`).

Same guarantees as `bridge/state/sqlite/__init__.py`, across machines: a write's audit row, the intent it
closes and the store marker it advances commit in ONE transaction; `seq` is one identity column
for the whole deployment (unique and increasing in insertion order; rows of concurrent
transactions may become visible slightly out of seq order, so a tail reader re-reads a small
window rather than trusting `since_seq` alone); a revocation is one UPDATE every replica sees at
its next read. Nothing is cached in the process: every grant, manifest and binding is read from
the database when a decision needs it (docs/deploying.md, "what a replica keeps in memory").

Append-only audit: the runtime role is granted SELECT and INSERT on `audit`, nothing else, and
triggers refuse UPDATE, DELETE and TRUNCATE for every role (the owner included). Erasure never
rewrites audit rows; it appends a `forget_subject` row (bridge/handlers/erasure.py).

Durability: state-changing rows commit with the server's `synchronous_commit`. Rows of reads
(`recall`, `inspect`) through `append_read` are group-committed (`read_rows.py`): committed
together within 50 ms, after 64 rows, with the process's next state-changing row, or before its
audit query, export or close, with `synchronous_commit = off`: a process crash can lose the read
rows of the last 50 ms, a server crash the last read rows it committed, never a write's.
`defer_reads=False` commits each read row (`synchronous_commit = off`) before the recall returns;
`fsync_reads=True` with the server's `synchronous_commit`. Schemas are versioned migrations
applied at start-up under an advisory lock (`identity.storage.postgres`). It never decides who may do what.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import Any, Iterable, Sequence
from urllib.parse import unquote, urlsplit

from adapters.base import StoreMarker
from adapters.scopes import ScopeKey
from bridge.errors import ConfigurationError
from bridge.state.protocols import WriteIntent
from bridge.state.postgres import carry
from bridge.state.postgres.manifests import PgManifests
from bridge.state.postgres.queries import Conn, count, fetch
from bridge.state.postgres.read_rows import INSERT_AUDIT_ROW, PgGroupCommittedReads, PgReadRows
from bridge.state.postgres.sharing import SHARING_PG_MIGRATION, PgShares, PgTeams
from bridge.state.common import check_audit_action
from bridge.state.records import READ_ACTIONS, STORING_ACTIONS, AuditEvent, AuditRecord, AuditView, Grant
from bridge.state.postgres.usage import PG_USAGE_MIGRATIONS, PgUsage
from identity.model import MemoryIdentity
from identity.storage.postgres import DEFAULT_SCHEMA, PgPool, migrate
from identity.state.postgres import (
    IDENTITY_MIGRATIONS,
    PgApiKeyRepository,
    PgNonceCache,
    PgSessionRepository,
)

__all__ = ["PostgresState", "open_postgres_state", "STATE_MIGRATIONS", "ALL_MIGRATIONS"]


STATE_MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("audit", ("""
        CREATE TABLE audit (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, ts double precision NOT NULL, tenant_id text NOT NULL,
            actor text NOT NULL, user_id text NOT NULL, actor_fingerprint text NOT NULL, session_id text NOT NULL,
            action text NOT NULL, memory_ids text[] NOT NULL, scopes text[] NOT NULL, grant_ids text[] NOT NULL, detail text NOT NULL);
        CREATE INDEX audit_by_tenant ON audit (tenant_id, seq);
        CREATE INDEX audit_by_user ON audit (tenant_id, user_id, seq);
        CREATE INDEX audit_by_memory ON audit USING gin (memory_ids);
        CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
            $$ BEGIN RAISE EXCEPTION 'audit log is append-only' USING ERRCODE = 'insufficient_privilege'; END $$;
        CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit FOR EACH ROW EXECUTE FUNCTION audit_append_only();
        CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
        CREATE TABLE write_intents (
            intent_id text PRIMARY KEY, tenant_id text NOT NULL, actor text NOT NULL, user_id text NOT NULL,
            actor_fingerprint text NOT NULL, session_id text NOT NULL, action text NOT NULL, scope text NOT NULL,
            backend_key text NOT NULL, created_at double precision NOT NULL);
        CREATE TABLE store_binding (only_row integer PRIMARY KEY CHECK (only_row = 1), store_id text NOT NULL, writes bigint NOT NULL);
        GRANT SELECT, INSERT ON audit TO {runtime};
        GRANT SELECT, INSERT, DELETE ON write_intents TO {runtime};
        GRANT SELECT, INSERT, UPDATE ON store_binding TO {runtime};
    """,)),
    ("grants", ("""
        CREATE TABLE grants (
            grant_id text PRIMARY KEY, tenant_id text NOT NULL, grantee_user_id text NOT NULL, grantee_agent_id text,
            scope text NOT NULL, issued_by text NOT NULL, reason text NOT NULL, issued_at double precision NOT NULL,
            expires_at double precision NOT NULL, revoked_at double precision);
        CREATE INDEX grants_by_grantee ON grants (tenant_id, grantee_user_id);
        GRANT SELECT, INSERT, DELETE ON grants TO {runtime};
        GRANT UPDATE (revoked_at) ON grants TO {runtime};
    """,)),
    ("manifests", ("""
        CREATE TABLE manifests (
            manifest_id text PRIMARY KEY, tenant_id text NOT NULL, user_id text NOT NULL, parent_agent_id text NOT NULL,
            child_agent_id text NOT NULL, task text NOT NULL, depth text NOT NULL, may_reinject boolean NOT NULL,
            created_at double precision NOT NULL, expires_at double precision NOT NULL, parent_manifest_id text,
            revoked_at double precision);
        CREATE INDEX manifests_by_parent ON manifests (parent_manifest_id);
        CREATE INDEX manifests_by_user ON manifests (tenant_id, user_id, expires_at);
        CREATE INDEX manifests_by_expiry ON manifests (expires_at);
        CREATE TABLE manifest_entries (
            manifest_id text NOT NULL REFERENCES manifests (manifest_id) ON DELETE CASCADE, position integer NOT NULL,
            scope text NOT NULL, memory_id text NOT NULL, PRIMARY KEY (manifest_id, position));
        CREATE INDEX manifest_entries_by_memory ON manifest_entries (memory_id);
        GRANT SELECT, INSERT, DELETE ON manifests, manifest_entries TO {runtime};
        GRANT UPDATE (revoked_at) ON manifests TO {runtime};
    """,)),
    SHARING_PG_MIGRATION,
)
#: Every component the state opens with (the bridge's and the identity's), in order.
ALL_MIGRATIONS = STATE_MIGRATIONS + PG_USAGE_MIGRATIONS + IDENTITY_MIGRATIONS + (carry.CARRY_PG_MIGRATION,)


def _event(row: Sequence[Any]) -> AuditEvent:
    seq, ts, tenant, actor, session, action, mids, scopes, grants, detail = row
    return AuditEvent(int(seq), ts, tenant, actor, session, action, tuple(mids), tuple(scopes), tuple(grants), json.loads(detail))


async def _stored_seq(conn: Conn, tenant_id: str, memory_id: str) -> int | None:
    """The row that already says `memory_id` was stored, if one does."""
    actions = sorted(STORING_ACTIONS)
    found = await (await conn.execute(
        "SELECT seq FROM audit WHERE tenant_id = %s AND memory_ids @> ARRAY[%s]::text[]"
        " AND (action = ANY(%s) OR (action = 'recovered' AND detail::jsonb ->> 'operation' = ANY(%s))) ORDER BY seq LIMIT 1",
        (tenant_id, memory_id, actions, actions),
    )).fetchone()
    return None if found is None else int(found[0])


async def _lock_write(conn: Conn, scope: str, backend_key: str) -> None:
    """Serialise the audit of one write across replicas until the transaction ends: two
    attempts of one write (a retry racing its first try) must not both see "no row yet"."""
    key = int.from_bytes(hashlib.blake2b(f"viking-bridge/stored/{scope}|{backend_key}".encode(), digest_size=8).digest(), "big", signed=True)
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))


async def _recovered_seq(conn: Conn, tenant_id: str, intent_id: str) -> int | None:
    """The seq of the `recovered` row some replica wrote for `intent_id`, if one did."""
    found = await (await conn.execute(
        "SELECT seq FROM audit WHERE tenant_id = %s AND action = 'recovered' AND detail::jsonb ->> 'intent' = %s ORDER BY seq LIMIT 1",
        (tenant_id, intent_id),
    )).fetchone()
    return None if found is None else int(found[0])


async def _advance_marker(conn: Conn, marker: StoreMarker) -> None:
    # GREATEST: several replicas write one store; the recorded mark only ever moves forward
    await conn.execute(
        "INSERT INTO store_binding (only_row, store_id, writes) VALUES (1, %s, %s) ON CONFLICT (only_row) DO UPDATE"
        " SET writes = GREATEST(store_binding.writes, excluded.writes) WHERE store_binding.store_id = excluded.store_id",
        (marker.store_id, marker.writes),
    )


_INSERT_AUDIT = INSERT_AUDIT_ROW + " RETURNING seq"


class PgAuditLog(PgGroupCommittedReads):
    """`intent_grace_s`: `open_intents` leaves out intents younger than this, so a replica that
    opens while another is mid-write does not reconcile (and double-audit) a live write.
    `defer_reads` (unless `fsync_reads`): read rows through `append_read` are group-committed."""

    def __init__(self, pool: PgPool, *, fsync_reads: bool = False, defer_reads: bool = True, intent_grace_s: float = 0.0) -> None:
        self.pool, self.fsync_reads, self.intent_grace_s = pool, fsync_reads, intent_grace_s
        #: read rows waiting for their group commit (None: every read row is committed at once)
        self._reads = PgReadRows(self.aflush, flush_at_exit=self.flush) if defer_reads and not fsync_reads else None

    @staticmethod
    def _row(identity: MemoryIdentity, action: str, memory_ids: Iterable[str], scopes: Iterable[object],
             grant_ids: Iterable[str | None], detail: dict[str, Any] | None) -> tuple:
        return (
            time.time(), identity.tenant_id, identity.principal, identity.user_id, identity.fingerprint, identity.session_id, action,
            list(memory_ids), sorted({str(s) for s in scopes}), sorted({g for g in grant_ids if g}),
            json.dumps(detail or {}, ensure_ascii=False, default=str),
        )

    async def append(
        self, identity: MemoryIdentity, action: str, *, memory_ids: Iterable[str] = (), scopes: Iterable[object] = (),
        grant_ids: Iterable[str | None] = (), detail: dict[str, Any] | None = None,
        closes_intent: str | None = None, store_marker: StoreMarker | None = None,
    ) -> int:
        check_audit_action(action)
        lazy = not self.fsync_reads and action in READ_ACTIONS and closes_intent is None
        row = self._row(identity, action, memory_ids, scopes, grant_ids, detail)

        async def run(conn: Conn) -> int:
            if lazy:
                await conn.execute("SET LOCAL synchronous_commit = off")
            if closes_intent is not None:
                # the intent row is the claim here too: a replica whose open checks reconciled this
                # intent (a write slower than the grace) already audited it as `recovered`
                claimed = await conn.execute("DELETE FROM write_intents WHERE intent_id = %s", (closes_intent,))
                if claimed.rowcount == 0 and (seq := await _recovered_seq(conn, identity.tenant_id, closes_intent)) is not None:
                    return seq
            seq = (await (await conn.execute(_INSERT_AUDIT, row)).fetchone())[0]  # type: ignore[index]
            if store_marker is not None:
                await _advance_marker(conn, store_marker)
            return int(seq)

        return await self._run(run)

    async def append_stored(
        self, identity: MemoryIdentity, action: str, *, memory_id: str, scope: ScopeKey, backend_key: str, created: bool,
        closes_intent: str, detail: dict[str, Any] | None = None, store_marker: StoreMarker | None = None,
    ) -> int:
        check_audit_action(action)
        row = self._row(identity, action, [memory_id], [scope], [], detail)

        async def run(conn: Conn) -> int:
            await _lock_write(conn, str(scope), backend_key)
            claimed = (await conn.execute("DELETE FROM write_intents WHERE intent_id = %s", (closes_intent,))).rowcount
            # an earlier attempt of this same write (same scope, same backend key) is audited by this row
            await conn.execute(
                "DELETE FROM write_intents WHERE scope = %s AND backend_key = %s AND action = ANY(%s)",
                (str(scope), backend_key, sorted(STORING_ACTIONS)),
            )
            if not created or not claimed:
                existing = await _stored_seq(conn, identity.tenant_id, memory_id)
                if existing is not None:
                    if store_marker is not None:
                        await _advance_marker(conn, store_marker)
                    return existing
            seq = (await (await conn.execute(_INSERT_AUDIT, row)).fetchone())[0]  # type: ignore[index]
            if store_marker is not None:
                await _advance_marker(conn, store_marker)
            return int(seq)

        return await self._run(run)

    async def query(
        self, view: AuditView, *, action: str | None = None, memory_id: str | None = None, since_seq: int = 0,
        before_seq: int | None = None, actor: str | None = None, limit: int = 100,
    ) -> list[AuditEvent]:
        await self.aflush()  # this process's own queued reads are part of what it asks for
        text = "SELECT seq, ts, tenant_id, actor, session_id, action, memory_ids, scopes, grant_ids, detail FROM audit WHERE tenant_id = %s AND seq > %s"
        params: list[object] = [view.tenant_id, since_seq]
        for clause, value in ((" AND user_id = %s", view.user_id), (" AND seq < %s", before_seq), (" AND actor = %s", actor), (" AND action = %s", action), (" AND memory_ids @> ARRAY[%s]::text[]", memory_id)):
            if value is not None:
                text += clause
                params.append(value)
        text += " ORDER BY seq DESC LIMIT %s"
        params.append(limit)
        return [_event(r) for r in await fetch(self.pool, text, params, "audit log")]

    async def begin_intent(self, identity: MemoryIdentity, action: str, scope: ScopeKey, backend_key: str) -> str:
        intent_id = uuid.uuid4().hex
        row = (intent_id, identity.tenant_id, identity.principal, identity.user_id, identity.fingerprint, identity.session_id, action, str(scope), backend_key, time.time())
        await count(self.pool, "INSERT INTO write_intents VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", row, "audit log")
        return intent_id

    async def open_intents(self) -> Sequence[WriteIntent]:
        rows = await fetch(self.pool, "SELECT * FROM write_intents WHERE created_at <= %s ORDER BY created_at", (time.time() - self.intent_grace_s,), "audit log")
        return [WriteIntent(i, t, a, u, f, s, act, ScopeKey.parse(scope), key, c) for i, t, a, u, f, s, act, scope, key, c in rows]

    async def close_intent(self, intent_id: str) -> None:
        await count(self.pool, "DELETE FROM write_intents WHERE intent_id = %s", (intent_id,), "audit log")

    async def recover_intent(self, intent: WriteIntent, memory_ids: Sequence[str], store_marker: StoreMarker | None = None) -> int:
        row = (
            time.time(), intent.tenant_id, intent.actor, intent.user_id, intent.actor_fingerprint, intent.session_id, "recovered",
            list(memory_ids), [str(intent.scope)], [],
            json.dumps({"operation": intent.action, "intent": intent.intent_id, "announced_at": intent.created_at}),
        )

        async def run(conn: Conn) -> int:
            # the intent row is the claim: of two replicas reconciling one intent at once, one
            # deletes it and audits; the other finds the row the winner wrote
            stored = intent.action in STORING_ACTIONS and len(memory_ids) == 1
            if stored:
                await _lock_write(conn, str(intent.scope), intent.backend_key)
            claimed = await conn.execute("DELETE FROM write_intents WHERE intent_id = %s", (intent.intent_id,))
            if claimed.rowcount == 0 and (seq := await _recovered_seq(conn, intent.tenant_id, intent.intent_id)) is not None:
                return seq
            if stored and (existing := await _stored_seq(conn, intent.tenant_id, memory_ids[0])) is not None:
                return existing  # a retry already audited this memory: the intent only closes
            seq = (await (await conn.execute(_INSERT_AUDIT, row)).fetchone())[0]  # type: ignore[index]
            if store_marker is not None:
                await _advance_marker(conn, store_marker)
            return int(seq)

        return await self._run(run)

    async def bound_store(self) -> StoreMarker | None:
        rows = await fetch(self.pool, "SELECT store_id, writes FROM store_binding", (), "audit log")
        return StoreMarker(rows[0][0], int(rows[0][1])) if rows else None

    async def bind_store(self, marker: StoreMarker) -> None:
        await count(self.pool, "INSERT INTO store_binding (only_row, store_id, writes) VALUES (1, %s, %s) ON CONFLICT (only_row) DO UPDATE"
                     " SET store_id = excluded.store_id, writes = excluded.writes", (marker.store_id, marker.writes), "audit log")

    async def has_rows(self) -> bool:
        await self.aflush()
        return bool(await fetch(self.pool, "SELECT 1 FROM audit LIMIT 1", (), "audit log"))

    async def export_rows(self, tenant_id: str, *, after_seq: int = 0, limit: int = 500) -> list[AuditRecord]:
        await self.aflush()  # recall rows still queued in this process belong to the history too
        return await carry.export_rows(self.pool, tenant_id, after_seq, limit)

    async def import_rows(self, rows: Sequence[AuditRecord], origin: str) -> int:
        await self.aflush()  # this process's own rows keep their order ahead of what is carried in
        return await carry.import_rows(self.pool, rows, origin)


_GRANT_COLUMNS = "grant_id, tenant_id, grantee_user_id, grantee_agent_id, scope, issued_by, reason, issued_at, expires_at, revoked_at"


class PgGrants:
    def __init__(self, pool: PgPool) -> None:
        self.pool = pool

    @staticmethod
    def _grant(row: Sequence[Any]) -> Grant:
        gid, tenant, user, agent, scope, by, reason, issued, expires, revoked = row
        return Grant(gid, tenant, user, agent, ScopeKey.parse(scope), by, reason, issued, expires, revoked)

    async def _rows(self, text: str, params: tuple) -> list[Grant]:
        return [self._grant(r) for r in await fetch(self.pool, text, params, "grant store")]

    async def add(self, grant: Grant) -> None:
        g = grant
        await count(self.pool, f"INSERT INTO grants ({_GRANT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, NULL)",
                     (g.grant_id, g.tenant_id, g.grantee_user_id, g.grantee_agent_id, str(g.scope), g.issued_by, g.reason, g.issued_at, g.expires_at), "grant store")

    async def get(self, grant_id: str) -> Grant | None:
        rows = await self._rows(f"SELECT {_GRANT_COLUMNS} FROM grants WHERE grant_id = %s", (grant_id,))
        return rows[0] if rows else None

    async def for_grantee(self, tenant_id: str, user_id: str) -> list[Grant]:
        return await self._rows(f"SELECT {_GRANT_COLUMNS} FROM grants WHERE tenant_id = %s AND grantee_user_id = %s", (tenant_id, user_id))

    async def revoke(self, grant_id: str, at: float) -> bool:
        return await count(self.pool, "UPDATE grants SET revoked_at = %s WHERE grant_id = %s AND revoked_at IS NULL", (at, grant_id), "grant store") > 0

    async def purge_grantee(self, tenant_id: str, user_id: str) -> int:
        return await count(self.pool, "DELETE FROM grants WHERE tenant_id = %s AND grantee_user_id = %s", (tenant_id, user_id), "grant store")

    async def for_tenant(self, tenant_id: str, *, limit: int = 1000) -> list[Grant]:
        return await self._rows(f"SELECT {_GRANT_COLUMNS} FROM grants WHERE tenant_id = %s ORDER BY issued_at DESC LIMIT %s", (tenant_id, limit))


def _user_of(url: str) -> str:
    user = unquote(urlsplit(url).username or "")
    if not user:
        raise ConfigurationError("the PostgreSQL URL names no user; the runtime role must be explicit (postgresql://ROLE@host/db)")
    return user


class PostgresState:
    """Audit, grants, manifests — and identity repositories — over ONE pool on `url` (the
    runtime role). Migrations run first over `migrate_url` (the schema owner; default: `url`
    itself, for a development database the runtime role owns), granting the runtime privileges
    to `runtime_role` (default: the user of `url`)."""

    def __init__(self, url: str, *, schema: str = DEFAULT_SCHEMA, migrate_url: str | None = None, runtime_role: str | None = None,
                 fsync_reads: bool = False, defer_reads: bool = True, pool_size: int = 8, intent_grace_s: float = 0.0) -> None:
        migrate(migrate_url or url, ALL_MIGRATIONS, schema=schema, runtime_role=runtime_role or _user_of(url))
        self.schema = schema
        self.pool = PgPool(url, schema=schema, max_size=pool_size)
        self.audit = PgAuditLog(self.pool, fsync_reads=fsync_reads, defer_reads=defer_reads, intent_grace_s=intent_grace_s)
        self.grants = PgGrants(self.pool)
        self.manifests, self.usage = PgManifests(self.pool), PgUsage(self.pool)  # usage: storage-quota counters
        self.shares = PgShares(self.pool)
        self.teams = PgTeams(self.pool)

    # identity state over the same pool (the bridge closes the pool once, with the state)
    def session_repository(self) -> PgSessionRepository:
        return PgSessionRepository(self.pool)

    def api_key_repository(self) -> PgApiKeyRepository:
        return PgApiKeyRepository(self.pool)

    def nonce_cache(self, **kwargs: Any) -> PgNonceCache:
        return PgNonceCache(self.pool, **kwargs)

    def bound_store_id(self) -> str | None:
        async def run(conn: Conn) -> str | None:
            row = await (await conn.execute("SELECT store_id FROM store_binding")).fetchone()
            return row[0] if row else None

        return self.pool.run_sync(run, "audit log")

    def close(self) -> None:
        try:
            self.audit.flush()  # queued read rows are committed before the pool closes
        finally:
            self.pool.close()

    async def aclose(self) -> None:
        try:
            await self.audit.aflush()  # waits for a group commit this loop has in flight, too
        finally:
            self.close()

    def __repr__(self) -> str:
        return f"PostgresState({self.pool.where!r}, schema={self.schema!r})"


def open_postgres_state(url: str, **kwargs: Any) -> PostgresState:
    """What `open_bridge` calls when `VIKING_BRIDGE_STATE_URL` is a postgresql:// URL."""
    return PostgresState(url, **kwargs)
