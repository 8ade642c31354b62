"""`MemoryBridge`: the public API. Identity in, permission-checked memory operations out.

Every operation is data (`bridge/operations/__init__.py`) run by `execute(identity, op)`, which in one
place: checks the identity is an authenticated `MemoryIdentity` (built by an identity provider
from a credential, never from the operation), re-checks the session binding, applies the
configured limits, runs the operation's handler (`bridge/handlers/`), and audits every refusal
as a `denied` row before re-raising it. The friendly methods (`recall`, `remember`, ...) are
one-line sugar over `execute` (`bridge/methods.py`).

On first use the bridge runs its open checks (`bridge/writes/recovery.py`): the store must be the one
its audit log describes, and writes a crash left unaudited are found and audited.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from adapters.base import MemoryBackend
from adapters.sync import LoopRunner, SyncFacade
from bridge.assembly import opening
from bridge.errors import InvalidInput, NotPermitted, RecallIncomplete
from bridge.handlers import HANDLERS
from bridge.operations import Operation
from bridge.writes.recovery import open_checks
from bridge.runtime import BridgeRuntime
from bridge.assembly.settings import BridgeSettings
from bridge.state.memory import MemoryState
from bridge.state.protocols import BridgeState
from bridge.methods import OperationMethods, ReadMethods
from identity.errors import Forbidden
from identity.model import MemoryIdentity
from identity.sessions import InMemorySessionRegistry, SessionRegistry

__all__ = ["MemoryBridge", "SyncMemoryBridge", "open_bridge"]

log = logging.getLogger("viking_bridge")
#: Refusals are security data: who tried what is audited, then the error is re-raised.
REFUSALS = (NotPermitted, RecallIncomplete, Forbidden)


class MemoryBridge(OperationMethods, ReadMethods):
    """Async facade. Build with `open_bridge()` (the settings), `MemoryBridge.open_local(home)`,
    `with_backend(backend, home)`, or from parts."""

    def __init__(
        self,
        backend: MemoryBackend,
        state: BridgeState | None = None,
        *,
        sessions: SessionRegistry | None = None,
        reinitialise: bool = False,
        **options: Any,
    ) -> None:
        """`options`: any `BridgeRuntime` field (policy, ranking, budget, limits, extractor,
        token_counter, server_side_extraction, clock). `reinitialise=True` re-binds a store
        that no longer matches its audit log (see bridge/writes/recovery.py) — an explicit act only."""
        server_side = bool(options.pop("server_side_extraction", False)) and backend.capabilities.server_side_extraction
        self.runtime = BridgeRuntime(
            backend=backend,
            state=state if state is not None else MemoryState(),
            sessions=sessions if sessions is not None else InMemorySessionRegistry(),
            server_side_extraction=server_side,
            **options,
        )
        self._reinitialise = reinitialise
        self._opened: asyncio.Lock | bool = False

    @classmethod
    def open_local(cls, home: str | Path, **kwargs: Any) -> "MemoryBridge":
        """The embedded default: store, state and sessions under `home` (bridge/assembly/opening.py)."""
        return opening.open_local(cls, home, **kwargs)

    @classmethod
    def with_backend(cls, backend: MemoryBackend, home: str | Path, **kwargs: Any) -> "MemoryBridge":
        """Any backend, with the bridge's own state (audit, grants, manifests, sessions) in `home`."""
        return opening.with_backend(cls, backend, home, **kwargs)

    @classmethod
    def from_settings(cls, settings: "BridgeSettings | None" = None, **kwargs: Any) -> "MemoryBridge":
        """The bridge the `VIKING_BRIDGE_*` settings describe (local, or PostgreSQL for replicas)."""
        return opening.from_settings(cls, settings, **kwargs)

    # the parts, for callers and tests that need them
    backend = property(lambda self: self.runtime.store)  # the raw store (expired records included)
    state = property(lambda self: self.runtime.state)
    sessions = property(lambda self: self.runtime.sessions)
    policy = property(lambda self: self.runtime.policy)
    limits = property(lambda self: self.runtime.limits)

    async def execute(self, identity: MemoryIdentity, op: Operation) -> Any:
        """Run one operation as `identity`: session check -> limits -> handler -> refusal audit."""
        if not isinstance(identity, MemoryIdentity):
            raise InvalidInput("the first argument must be an authenticated MemoryIdentity")
        handler = HANDLERS.get(type(op))
        if handler is None:
            raise InvalidInput(f"not an operation: {type(op).__name__}")
        if self._opened is not True:
            await self.aopen()
        try:
            if op.continues_session:
                identity = await self.runtime.sessions.continue_session_async(identity)
            op.check(self.runtime.limits)
            if op.changes_ref:  # every path that changes a memory by reference: injected ones are read-only to the child
                await self._check_not_injected(identity, op.ref)  # type: ignore[attr-defined]
            return await handler(self.runtime, identity, op)
        except REFUSALS as exc:
            await self._audit_refusal(identity, op, exc)
            raise
        finally:
            if self.runtime.quarantined:
                await self._audit_quarantine(identity)

    async def _check_not_injected(self, identity: MemoryIdentity, ref: tuple[Any, str]) -> None:
        key, memory_id = ref
        rt = self.runtime
        held = await rt.state.manifests.live_for_tenant(identity.tenant_id, rt.clock(), memory_id=memory_id)
        rt.policy.check_not_injected(identity, key, memory_id, held)

    async def aopen(self) -> None:
        """Run the open checks (store binding, crash reconciliation) now instead of on first use."""
        if self._opened is False:
            self._opened = asyncio.Lock()
        lock = self._opened
        assert isinstance(lock, asyncio.Lock)
        async with lock:
            if self._opened is lock:
                await open_checks(self.runtime, reinitialise=self._reinitialise)
                if self.runtime.roles is not None:  # the role file's team membership (bridge/roles/teams.py)
                    from bridge.roles.teams import apply_role_teams

                    await apply_role_teams(self.runtime.state, self.runtime.roles)
                self._opened = True

    async def _audit_refusal(self, identity: MemoryIdentity, op: Operation, exc: BaseException) -> None:
        await self.audit_refusal(identity, op.operation_name(), exc)

    async def audit_refusal(self, identity: MemoryIdentity, operation: str, exc: BaseException) -> None:
        """One `denied` row for a refusal (security data too). Doors call it for what they refuse
        before any operation exists — a request or tool call naming another identity — so those
        attempts are on record like the policy's refusals. Never raises: the refusal stands."""
        try:
            await self.runtime.state.audit.append(
                identity, "denied", detail={"operation": operation, "error": type(exc).__name__, "message": str(exc)[:300]}
            )
        except Exception:  # never mask the refusal itself
            log.exception("could not audit a refused %s", operation)

    async def _audit_quarantine(self, identity: MemoryIdentity) -> None:
        """A damaged record the backend took out of service, so an operator learns of it: one audit row
        each, in the name of the caller whose operation found it; ids and reasons, no content."""
        rows, self.runtime.quarantined[:] = list(self.runtime.quarantined), []
        for row in rows:
            log.error("quarantined %s in %s: %s", row.memory_id, row.scope, row.reason)
            await self.runtime.state.audit.append(identity, "quarantine", memory_ids=[row.memory_id], scopes=[row.scope], detail={"reason": row.reason, "backend": self.runtime.backend.name})

    async def aclose(self) -> None:
        await self.runtime.backend.aclose()
        close = getattr(self.runtime.sessions, "close", None)
        if close is not None:
            close()
        await self.runtime.state.aclose()


def open_bridge(settings: "BridgeSettings | None" = None, **kwargs: Any) -> MemoryBridge:
    """`MemoryBridge.from_settings`: what the CLI and the service open, and library users may too."""
    return MemoryBridge.from_settings(settings, **kwargs)


class SyncMemoryBridge(SyncFacade):
    """Blocking access to `MemoryBridge` for scripts and the CLI: same methods, no `await`."""

    def __init__(self, bridge: MemoryBridge) -> None:
        super().__init__(bridge, LoopRunner())

    @classmethod
    def open_local(cls, home: str | Path, **kwargs: Any) -> "SyncMemoryBridge":
        return cls(MemoryBridge.open_local(home, **kwargs))
