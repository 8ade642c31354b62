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
from typing import AsyncContextManager, Callable

from adapters.base import MemoryBackend

__all__ = ["AdapterFactory", "register_adapter", "registered_adapters", "get_adapter"]

BackendFactory = Callable[[], AsyncContextManager[MemoryBackend]]


@dataclass(frozen=True)
class AdapterFactory:
    name: str
    create: BackendFactory
    description: str = ""
    # Why the adapter cannot run here (missing credentials, server not installable); None = ready.
    unavailable_reason: Callable[[], str | None] | None = None


_REGISTRY: dict[str, AdapterFactory] = {}


def register_adapter(
    name: str, *, description: str = "", unavailable_reason: Callable[[], str | None] | None = None
) -> Callable[[BackendFactory], BackendFactory]:
    def decorate(factory: BackendFactory) -> BackendFactory:
        _REGISTRY[name] = AdapterFactory(name, factory, description, unavailable_reason)
        return factory

    return decorate


def registered_adapters() -> dict[str, AdapterFactory]:
    return dict(_REGISTRY)


def get_adapter(name: str) -> AdapterFactory:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(f"no adapter registered as {name!r} (registered: {known})") from None
