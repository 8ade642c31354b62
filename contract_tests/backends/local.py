"""Contract-suite factory for the embedded local backend: a fresh, EMPTY store per test.

Each call makes a new temporary directory, yields a `LocalBackend` over it, and on exit closes
the store and removes the directory, so nothing one test wrote can be seen by the next.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import AsyncIterator

import numpy as np

from adapters.local import LocalBackend
from contract_tests.registry import register_adapter


async def _insert_unscoped(backend: LocalBackend, tenant_id: str, content: str) -> None:
    """A raw row with no scope (empty scope column, no tenant), as a buggy import might leave."""
    (vector,) = await backend.embedder.embed([content])
    with backend._lock:  # test hook: bypasses the adapter's put on purpose
        backend._db.execute(
            "INSERT INTO memories (id, scope, tenant_id, content, kind, status, confidence, provenance, subject_user_id,"
            " metadata, created_at, updated_at, idempotency_key, content_hash, vector)"
            " VALUES (?, '', NULL, ?, 'note', 'active', 1.0, ?, NULL, ?, 0, 0, ?, '', ?)",
            (
                "unscoped-" + content[:8].encode().hex(), content,
                '{"author_user_id": "nobody", "author_agent_id": "nobody"}',
                '{"user_id": "%s", "tenant_id": "%s"}' % ("alice", tenant_id),
                "unscoped-" + content[:8].encode().hex(),
                np.ascontiguousarray(vector, dtype=np.float32).tobytes(),
            ),
        )
        backend._partitions.clear()


@register_adapter("local", description="embedded SQLite + numpy store in a temporary directory", insert_unscoped=_insert_unscoped)
@contextlib.asynccontextmanager
async def local_backend() -> AsyncIterator[LocalBackend]:
    home = Path(tempfile.mkdtemp(prefix="vb-contract-local-"))
    backend = LocalBackend(home / "store")
    try:
        yield backend
    finally:
        await backend.aclose()
        shutil.rmtree(home, ignore_errors=True)
