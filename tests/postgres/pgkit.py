"""Helpers of the PostgreSQL tests (import as `tests.postgres.pgkit`)."""

from __future__ import annotations

from typing import Any

import psycopg

from adapters.base import NewMemory, Provenance
from contract_tests.postgres_server import TestDatabase

SCHEMA = "viking_bridge"


def note(text: str, kind: str = "note") -> NewMemory:
    return NewMemory(content=text, kind=kind, provenance=Provenance(author_user_id="alice", author_agent_id="assistant"))


def connect(url: str) -> psycopg.Connection[Any]:
    """A plain connection with the store's schema (and public, where pgvector lives) on the path."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute(f"SET search_path TO {SCHEMA}, public")
    return conn


def as_app(db: TestDatabase) -> psycopg.Connection[Any]:
    return connect(db.app_url)
