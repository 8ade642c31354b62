"""Contract-suite factory for a routed service: two local stores behind one `RoutedBackend`.

Tenants `acme`, `t0`, `t2` live on store `a`; `globex`, `t1` and the global scope on store `b`,
so a recall of an acme identity (its own scopes + global) fans out over both and merges, and a
cross-tenant test crosses backends. Every other tenant is refused (`TenantNotRouted`). Each
call makes two fresh, empty stores in a temporary directory and removes them on exit.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import AsyncIterator

from adapters.local import LocalBackend
from adapters.routing import RoutedBackend
from contract_tests.backends.local import _insert_unscoped as _local_unscoped
from contract_tests.registry import register_adapter

TENANTS = {"acme": "a", "t0": "a", "t2": "a", "globex": "b", "t1": "b"}
GLOBAL_HOME = "b"


async def _insert_unscoped(backend: RoutedBackend, tenant_id: str, content: str) -> None:
    """The local store's unscoped row, planted in the store the tenant is routed to."""
    await _local_unscoped(backend.backends[backend.backend_name_for(tenant_id)], tenant_id, content)  # type: ignore[arg-type]


@register_adapter("routed", description="two local stores behind one routing table (tenants split, global on the second)",
                  insert_unscoped=_insert_unscoped)  # type: ignore[arg-type]
@contextlib.asynccontextmanager
async def routed_backend() -> AsyncIterator[RoutedBackend]:
    home = Path(tempfile.mkdtemp(prefix="vb-contract-routed-"))
    backend = RoutedBackend({"a": LocalBackend(home / "a"), "b": LocalBackend(home / "b")}, TENANTS, global_home=GLOBAL_HOME)
    try:
        yield backend
    finally:
        await backend.aclose()
        shutil.rmtree(home, ignore_errors=True)
