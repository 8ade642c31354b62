"""One way to open the project's SQLite files durably: WAL, fsync on commit, a busy timeout.

Every store (API keys, session bindings, the bridge's audit/grants/manifests, the local memory
store) opens its file through `connect_durable`, so "an acknowledged write survives a crash" and
"two processes may share the file" mean the same thing everywhere. It lives in `identity`, the
bottom layer, so every package can use it without a dependency cycle.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect_durable(path: str | Path, *, busy_timeout_s: float = 10.0) -> sqlite3.Connection:
    """An autocommit connection (transactions are explicit) in WAL mode with synchronous=FULL."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
    return conn


def open_identity_store(path: str | Path, schema: str, what: str) -> sqlite3.Connection:
    """`connect_durable` + schema for the identity stores; any failure is a start-up error
    naming the store (`IdentityConfigurationError`), never a traceback from deep inside."""
    from identity.errors import IdentityConfigurationError

    try:
        conn = connect_durable(path, busy_timeout_s=5.0)
        conn.execute(schema)
    except (sqlite3.Error, OSError) as exc:
        raise IdentityConfigurationError(f"{what} at {path} cannot be opened: {exc}") from None
    return conn
