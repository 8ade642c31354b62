"""A thin synchronous facade over an async object, for callers that are not async.

The async core is the real implementation; this only owns a private event loop (one per facade,
on a private thread-free `asyncio.Runner`) so it can be used from plain scripts and the CLI. It
must not be used from inside a running event loop — that raises instead of deadlocking.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Awaitable, Callable, TypeVar

from adapters.errors import WrongContext

T = TypeVar("T")


class LoopRunner:
    """Runs coroutines to completion on one private loop, so pooled clients stay bound to it."""

    def __init__(self) -> None:
        self._runner = asyncio.Runner()

    @staticmethod
    def ensure_no_running_loop() -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        raise WrongContext("the sync facade cannot be used inside a running event loop; await the async API")

    def run(self, awaitable: Awaitable[T]) -> T:
        self.ensure_no_running_loop()
        return self._runner.run(awaitable)  # type: ignore[arg-type]

    def close(self) -> None:
        self._runner.close()


class SyncFacade:
    """Wraps every coroutine method of `target` as a blocking call; other attributes pass through."""

    def __init__(self, target: Any, runner: LoopRunner | None = None) -> None:
        self._target = target
        self._runner = runner or LoopRunner()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if asyncio.iscoroutinefunction(attr):
            @functools.wraps(attr)
            def call(*args: Any, **kwargs: Any) -> Any:
                self._runner.ensure_no_running_loop()  # before the coroutine exists: no dangling coroutine
                return self._runner.run(attr(*args, **kwargs))

            return call
        return attr

    def close(self) -> None:
        closer: Callable[[], Awaitable[None]] | None = getattr(self._target, "aclose", None)
        try:
            if closer is not None:
                self._runner.run(closer())
        finally:
            self._runner.close()

    def __enter__(self) -> "SyncFacade":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def SyncBackend(backend: Any) -> SyncFacade:  # noqa: N802 - reads as a type at call sites
    """`SyncBackend(LocalBackend(...)).search(query)` — blocking access to any adapter."""
    return SyncFacade(backend)
