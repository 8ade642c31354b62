"""Where adapters register for the contract suite (pattern: LangGraph checkpoint-conformance).

A factory is an async context manager function that yields a FRESH, EMPTY backend and removes
everything it created on exit. The suite never knows a backend by name; it asks the registry.

    from contract_tests.registry import register_adapter

    @register_adapter("mystore")
    @contextlib.asynccontextmanager
    async def mystore_backend():
        backend = MyBackend(namespace=f"contract-{uuid.uuid4().hex}")
        try:
            yield backend
        finally:
            await backend.drop_namespace()
            await backend.aclose()

Built-ins live in `contract_tests/backends/` and are registered on import of that package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncContextManager, Awaitable, Callable

from adapters.base import MemoryBackend

__all__ = ["AdapterFactory", "register_adapter", "register_unavailable", "registered_adapters", "get_adapter"]

BackendFactory = Callable[[], AsyncContextManager[MemoryBackend]]
# Optional hook: write one raw row that carries NO scope metadata into `backend` (bypassing the
# adapter's own put), so the suite can prove such rows are never returned. Arguments:
# (backend, tenant_id, content).
UnscopedWriter = Callable[[MemoryBackend, str, str], Awaitable[None]]


@dataclass(frozen=True)
class AdapterFactory:
    name: str
    create: BackendFactory
    description: str = ""
    # Why the adapter cannot run here (missing credentials, server not installable); None = ready.
    unavailable_reason: Callable[[], str | None] | None = None
    insert_unscoped: UnscopedWriter | None = None

    def why_unavailable(self) -> str | None:
        """None when the adapter can run here, else the reason (shown as the skip reason)."""
        if self.unavailable_reason is None:
            return None
        try:
            return self.unavailable_reason()
        except Exception as exc:  # a broken probe must not crash collection; it is a reason
            return f"unavailable_reason() raised {type(exc).__name__}: {exc}"


_REGISTRY: dict[str, AdapterFactory] = {}


def register_adapter(
    name: str,
    *,
    description: str = "",
    unavailable_reason: Callable[[], str | None] | None = None,
    insert_unscoped: UnscopedWriter | None = None,
) -> Callable[[BackendFactory], BackendFactory]:
    def decorate(factory: BackendFactory) -> BackendFactory:
        _REGISTRY[name] = AdapterFactory(name, factory, description, unavailable_reason, insert_unscoped)
        return factory

    return decorate


def register_unavailable(name: str, reason: str, *, description: str = "") -> None:
    """Register a placeholder for an adapter whose factory module could not be imported.

    The suite then reports every test for it as skipped with `reason`, instead of silently
    leaving the adapter out. A real registration (made later) replaces the placeholder.
    """
    if name in _REGISTRY:
        return

    def _cannot_create() -> AsyncContextManager[MemoryBackend]:
        raise RuntimeError(f"adapter {name!r} is unavailable: {reason}")

    _REGISTRY[name] = AdapterFactory(name, _cannot_create, description, lambda: reason)


def registered_adapters() -> dict[str, AdapterFactory]:
    return dict(_REGISTRY)


def get_adapter(name: str) -> AdapterFactory:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"no adapter registered as {name!r} (registered: {known})") from None
