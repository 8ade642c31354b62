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

Discovery: a backend's module is named in the `viking_bridge.contract_backends` entry-point
group of its distribution (name = adapter name, value = the module whose import registers it):

    [project.entry-points."viking_bridge.contract_backends"]
    mystore = "mypackage.contract_backend"

`load_registered_backends()` imports each of them once. The built-ins in `contract_tests/backends/`
are found exactly this way (see this project's pyproject.toml), so nothing here names them. A
module that cannot be imported does not break the suite: each adapter its entry point names is
registered as *unavailable* with the import error as the reason, so every test for it is
reported as skipped — never silently left out. (`-p mypackage.register` still works for a module
that calls `register_adapter` without an entry point.)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import AsyncContextManager, Awaitable, Callable

from adapters.base import MemoryBackend

__all__ = ["AdapterFactory", "BACKENDS_GROUP", "register_adapter", "register_unavailable", "registered_adapters", "get_adapter",
           "load_registered_backends"]

# The entry-point group through which every backend, built-in or third-party, is found.
BACKENDS_GROUP = "viking_bridge.contract_backends"

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
# module path -> None once imported, else the reason it could not be (each module is tried once).
_LOADED: dict[str, str | None] = {}


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


def load_registered_backends() -> dict[str, str]:
    """Import every module named in the `viking_bridge.contract_backends` group (once each).

    Returns {adapter name: reason} for the adapters that could not be loaded: their module failed
    to import, or it imported but did not register the name its entry point promised. Each such
    adapter is registered as unavailable with that reason.
    """
    failures: dict[str, str] = {}
    for ep in sorted(entry_points(group=BACKENDS_GROUP), key=lambda e: e.name):
        module = ep.value.split(":", 1)[0].strip()
        if module not in _LOADED:
            try:
                importlib.import_module(module)
                _LOADED[module] = None
            except Exception as exc:  # ImportError, a SyntaxError in a half-written file, ...
                _LOADED[module] = f"{module} could not be imported: {type(exc).__name__}: {exc}"
        reason = _LOADED[module]
        if reason is None and ep.name not in _REGISTRY:
            reason = f"{module} was imported but did not register_adapter({ep.name!r}) as its entry point says"
        if reason is not None:
            failures[ep.name] = reason
            register_unavailable(ep.name, reason)
    return failures


def registered_adapters() -> dict[str, AdapterFactory]:
    return dict(_REGISTRY)


def get_adapter(name: str) -> AdapterFactory:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise KeyError(
            f"no adapter registered as {name!r} (registered: {known}); a backend is found through the"
            f" {BACKENDS_GROUP!r} entry-point group of an installed distribution (reinstall after editing"
            " entry points) or registered by a module loaded with -p"
        ) from None
