"""Contract-suite factory for a routed service over three KINDS of backend behind one table.

    acme         -> `hosted`: hosted Viking Memory (the in-process simulator)
    globex, t1   -> `pg`:     PostgreSQL + pgvector (the shared test server, a fresh database)
    dev, t0, t2  -> `main`:   the embedded local store
    global scope -> `pg`      (named in the table, as `global = "pg"` in a routes file)

Why three kinds and not two stores of one kind: the suite's cross-tenant tests (acme vs globex,
the random worlds' t0 vs t1) then cross backend KINDS, so a leak between adapters with different
query languages, id schemes and score scales would show; and a recall of an acme identity (its
own scopes on Viking + the global scope on PostgreSQL) is split over two kinds and merged. Every
other tenant is refused (`TenantNotRouted`), never defaulted.

Each call builds each backend through its own contract factory (so each is FRESH and EMPTY:
a new simulator, a new database, a new store directory) and removes all three on exit. The
unscoped-row hook plants the row in the backend the tenant is routed to, with that kind's own
hook. Needs PostgreSQL: where none can be had, the adapter is skipped saying why.
"""

from __future__ import annotations

import contextlib
from typing import AsyncIterator, Awaitable, Callable

from adapters.base import MemoryBackend
from adapters.routing import RoutedBackend
from contract_tests.backends.local import _insert_unscoped as _local_unscoped
from contract_tests.backends.local import local_backend
from contract_tests.backends.postgres import _insert_unscoped as _postgres_unscoped
from contract_tests.backends.postgres import postgres_backend
from contract_tests.backends.viking import insert_unscoped as _viking_unscoped
from contract_tests.backends.viking import simulated_viking_backend
from contract_tests.postgres_server import unavailable_reason
from contract_tests.registry import register_adapter

__all__ = ["TENANTS", "GLOBAL_HOME", "routed_backend"]

TENANTS = {"acme": "hosted", "globex": "pg", "t1": "pg", "dev": "main", "t0": "main", "t2": "main"}
GLOBAL_HOME = "pg"

_FACTORIES: dict[str, Callable[[], contextlib.AbstractAsyncContextManager[MemoryBackend]]] = {
    "hosted": simulated_viking_backend,  # type: ignore[dict-item]
    "pg": postgres_backend,  # type: ignore[dict-item]
    "main": local_backend,  # type: ignore[dict-item]
}
_UNSCOPED: dict[str, Callable[..., Awaitable[None]]] = {"hosted": _viking_unscoped, "pg": _postgres_unscoped, "main": _local_unscoped}


async def _insert_unscoped(backend: RoutedBackend, tenant_id: str, content: str) -> None:
    """The unscoped row of the tenant's own backend kind, planted where that tenant is routed."""
    name = backend.backend_name_for(tenant_id)
    await _UNSCOPED[name](backend.backends[name], tenant_id, content)


@register_adapter("routed", description="one routing table over three kinds: acme on Viking, globex/t1 and global on PostgreSQL,"
                  " dev/t0/t2 on the local store", unavailable_reason=unavailable_reason,
                  insert_unscoped=_insert_unscoped)  # type: ignore[arg-type]
@contextlib.asynccontextmanager
async def routed_backend() -> AsyncIterator[RoutedBackend]:
    async with contextlib.AsyncExitStack() as stack:
        backends = {name: await stack.enter_async_context(factory()) for name, factory in _FACTORIES.items()}
        routed = RoutedBackend(backends, TENANTS, global_home=GLOBAL_HOME)
        # each factory closes and removes its own backend on exit; the routed one owns nothing more
        yield routed
