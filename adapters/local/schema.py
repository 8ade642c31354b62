"""The local store's files: where they are, their schema, and the checks made before opening.

Schema 4 (this build) adds the lexical index (adapters/local/lexical.py): the FTS5 table
`memories_lexical` (one row per memory, same rowid, scope-tagged term digests) and
`lexical_scopes` (scope -> tag). A schema-3 store gains both at open and has every row indexed in
the open's transaction; at every open, an index that does not hold exactly the rows of
`memories` is rebuilt. A schema-3 build refuses a schema-4 store (its writes would leave the
index behind).

Schema 3 (this build) adds `memories.expires_at` (epoch seconds, NULL = never) and the partial
index `memories_expiring (scope, expires_at)` over the rows that expire, so a search masks
expired rows of its partitions with one indexed query and the purge finds them without a scan.
A schema-2 store gains both at open (ALTER TABLE, in the open's transaction); a schema-2 build
refuses a schema-3 store (it would serve expired memories).

Schema 2 (this build) adds to schema 1, in the same database file:
- `counters`: `writes` (committed puts, updates and deletes: the `StoreMarker` high-water mark)
  and `changes` (one per committing transaction: the sequence partition versions are drawn from);
- `partition_version`: per ScopeKey, the `changes` value of the last transaction that touched it,
  so another process drops only the partitions that changed;
- `quarantine`: rows that cannot be served, kept for audit and erasure;
- meta `store_id` (random, made with the store) and `cursor_key` (signs `list_page` cursors).
A schema-1 store is upgraded in place at open, in one transaction; a schema-1 build refuses a
schema-2 store at open (so no old writer can commit without bumping the counters). A schema-1
process that already had the store open when it was upgraded keeps writing without stamping
partition versions: upgrade with every older process stopped.

`preflight` runs before SQLite touches anything, because opening a missing or empty file makes a
new, empty store: when the caller says a store is expected (it has a record of writes), a
missing directory, a missing or 0-byte database file, or a WAL left without its database file is
`CorruptStore` naming the files.

This module never decides who may see a row and never reads memory content.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import stat
import uuid
from pathlib import Path

from adapters.errors import EmbedderMismatch, InvalidRequest
from adapters.local import lexical
from adapters.local.errors import CorruptStore
from identity.storage.sqlite import ensure_private_dir

__all__ = ["SCHEMA_VERSION", "DB_FILENAME", "create_or_upgrade", "preflight", "private_dir", "recorded_embedder", "tighten_files"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = "4"
_READABLE_SCHEMAS = ("1", "2", "3", "4")
DB_FILENAME = "memories.sqlite3"
_SIDECARS = ("-wal", "-shm")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    scope TEXT NOT NULL,
    tenant_id TEXT,
    content TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    confidence REAL NOT NULL,
    provenance TEXT NOT NULL,
    subject_user_id TEXT,
    metadata TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    idempotency_key TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    expires_at REAL,
    UNIQUE (scope, id),
    UNIQUE (scope, idempotency_key)
);
CREATE INDEX IF NOT EXISTS memories_by_tenant ON memories (tenant_id, scope);
CREATE INDEX IF NOT EXISTS memories_by_scope ON memories (scope);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO counters (name, value) VALUES ('writes', 0), ('changes', 0);
CREATE TABLE IF NOT EXISTS partition_version (scope TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS partition_version_by_version ON partition_version (version);
CREATE TABLE IF NOT EXISTS quarantine (
    row_ref INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    detected_at REAL NOT NULL
)
"""


def db_path(directory: Path) -> Path:
    return directory / DB_FILENAME


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def preflight(directory: Path, *, expect_existing: bool) -> None:
    """Refuse, before SQLite creates anything, a store that should exist and does not."""
    db = db_path(directory)
    db_size = _size(db)
    wal_size = _size(db.with_name(db.name + "-wal"))
    if (db_size is None or db_size == 0) and wal_size:
        raise CorruptStore(
            f"the store database {db} is {'missing' if db_size is None else 'empty'} but its WAL "
            f"{db.name}-wal holds {wal_size} bytes: the database file was deleted or replaced; restore it",
            path=db,
        )
    if not expect_existing:
        return
    if not directory.is_dir():
        raise CorruptStore(f"the store directory {directory} is missing although a store was expected there", path=directory)
    if db_size is None:
        raise CorruptStore(f"the store database {db} is missing although a store was expected", path=db)
    if db_size == 0:
        raise CorruptStore(f"the store database {db} is empty (0 bytes) although a store was expected", path=db)


def private_dir(directory: Path) -> None:
    """Create the store directory 0700, warning about a wider existing one."""
    ensure_private_dir(directory)


def tighten_files(directory: Path) -> None:
    """chmod the database and its -wal/-shm to 0600 when they are wider; never widens."""
    db = db_path(directory)
    for path in (db, *(db.with_name(db.name + s) for s in _SIDECARS)):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o177:
            try:
                os.chmod(path, mode & 0o600)
            except OSError as exc:
                log.warning("cannot restrict %s (mode %04o) to 0600: %s", path, mode, exc.strerror or exc)


def recorded_embedder(db: sqlite3.Connection) -> str | None:
    """The embedder signature the store at `db` was built with; None for a new (empty) file."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    return None if row is None else str(row[0])


def create_or_upgrade(
    db: sqlite3.Connection, directory: Path, *, embedder_signature: str, dimension: int, expect_existing: bool, expected_store_id: str | None
) -> dict[str, str]:
    """Inside the caller's write transaction: create schema 2, or check and upgrade what is there.

    Returns the meta table. Raises `CorruptStore` when a store was expected and this is not it.
    """
    file = db_path(directory)
    had_meta = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is not None
    rows = dict(db.execute("SELECT key, value FROM meta").fetchall()) if had_meta else {}
    if not rows and expect_existing:
        raise CorruptStore(f"{file} holds no viking-bridge store although one was expected (emptied or replaced)", path=file)
    if rows:
        found = rows.get("schema_version")
        if found not in _READABLE_SCHEMAS:
            raise InvalidRequest(f"store at {directory} has schema {found!r}, this build reads {', '.join(_READABLE_SCHEMAS)}", backend="local")
        if rows.get("embedder") != embedder_signature:
            raise EmbedderMismatch(
                f"store at {directory} was built with embedder {rows.get('embedder')!r}, not {embedder_signature!r}; "
                "open it with the same embedder or re-embed into a new store",
                backend="local",
            )
    if expected_store_id is not None and rows.get("store_id") != expected_store_id:
        raise CorruptStore(
            f"{file} is store {rows.get('store_id')!r}, not the expected store {expected_store_id!r} (replaced or re-created)",
            path=file,
        )
    for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
        db.execute(statement)
    if "expires_at" not in {r[1] for r in db.execute("PRAGMA table_info(memories)")}:  # schema 1/2 -> 3
        db.execute("ALTER TABLE memories ADD COLUMN expires_at REAL")
    db.execute("CREATE INDEX IF NOT EXISTS memories_expiring ON memories (scope, expires_at) WHERE expires_at IS NOT NULL")
    for statement in lexical.SCHEMA:  # schema 3 -> 4: the lexical index, filled from the rows
        db.execute(statement)
    if not lexical.in_step(db):
        indexed = lexical.rebuild(db)
        if rows:
            log.warning("local store %s: lexical index rebuilt over %d rows", directory, indexed)
    wanted = {
        "schema_version": SCHEMA_VERSION,
        "embedder": embedder_signature,
        "dimension": str(dimension),
        "store_id": uuid.uuid4().hex,
        "cursor_key": secrets.token_hex(32),
    }
    missing = {k: v for k, v in wanted.items() if k not in rows}
    if missing:
        db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", missing.items())
    if rows and rows.get("schema_version") != SCHEMA_VERSION:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
    return {**rows, **missing, "schema_version": SCHEMA_VERSION}
