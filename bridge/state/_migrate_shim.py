"""TEMPORARY: stands in for identity.storage.apply_migrations until that lands (same signature)."""
from __future__ import annotations
import sqlite3
import time
from typing import Any, Sequence


def apply_migrations(conn: sqlite3.Connection, component: str, migrations: Sequence[Any]) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (component TEXT NOT NULL, version INTEGER NOT NULL, applied_at REAL NOT NULL, PRIMARY KEY (component, version))")
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version WHERE component = ?", (component,)).fetchone()[0]
        for version, step in enumerate(migrations, 1):
            if version <= done:
                continue
            if callable(step):
                step(conn)
            else:
                for statement in filter(None, (s.strip() for s in step.split(";\n"))):
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (?, ?, ?)", (component, version, time.time()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(migrations)
