"""What the bridge checks when it opens, before it serves anything.

1. **Store binding.** The bridge state records which memory store it describes (store id) and
   how far that store had got (committed writes) after every write. A store that reports
   another id (replaced, emptied, deleted and recreated) or fewer writes (rolled back) is
   refused, naming both files, and so is a store with writes whose bridge state is brand new
   (a deleted `bridge.sqlite3` must not silently restart the audit history at 0). Only an
   explicit re-initialisation (`reinitialise=True`, CLI `--reinitialise`) binds anew.
   State from before binding existed (audit rows, no binding) is bound on first open.
2. **Intents.** A change announced but never audited (a crash between the backend's commit and
   the audit row) is checked: a write by its idempotency key, a forget by the memory being gone,
   an erasure is recorded as interrupted. Landed -> audited as `recovered` in the actor's name;
   not landed -> the intent is closed.

What this cannot detect: a store whose deleted or damaged SQLite WAL silently lost committed
rows after a crash *and* its write counter with them (the counter lives in the same file).
"""

from __future__ import annotations

import logging

from adapters.base import StoreBinding
from adapters.errors import BackendError, BackendNotFound
from bridge.errors import CorruptStorage
from bridge.runtime import BridgeRuntime
from bridge.state.protocols import WriteIntent

__all__ = ["check_store_binding", "reconcile_intents", "open_checks"]

log = logging.getLogger("viking_bridge")


def _where(rt: BridgeRuntime) -> str:
    state = getattr(rt.state, "path", None)
    store = getattr(rt.store, "root", None) or getattr(rt.store, "path", None)
    return f"(store {store or rt.store.name}, bridge state {state or 'in memory'})"


async def check_store_binding(rt: BridgeRuntime, *, reinitialise: bool = False) -> None:
    if not isinstance(rt.store, StoreBinding):
        return
    marker = await rt.store.store_marker()
    audit = rt.state.audit
    bound = await audit.bound_store()
    if reinitialise:
        log.warning("re-initialising the binding between store and bridge state %s: was %s, now %s", _where(rt), bound, marker)
        await audit.bind_store(marker)
        return
    if bound is None:
        if marker.writes > 0 and not await audit.has_rows():
            raise CorruptStorage(
                f"the memory store has {marker.writes} committed writes but the bridge state holds no audit history {_where(rt)}: "
                "was the bridge state deleted or replaced? Restore it, or re-initialise explicitly (--reinitialise)",
                path=str(getattr(rt.state, "path", "")) or None,
            )
        await audit.bind_store(marker)
        return
    if marker.store_id != bound.store_id:
        raise CorruptStorage(
            f"the memory store is not the one this bridge state describes {_where(rt)}: store id {marker.store_id} "
            f"!= recorded {bound.store_id} (replaced, emptied or recreated store?); restore it, or re-initialise explicitly (--reinitialise)",
            path=str(getattr(rt.store, "root", "")) or None,
        )
    if marker.writes < bound.writes:
        raise CorruptStorage(
            f"the memory store has {marker.writes} committed writes but the bridge state recorded {bound.writes} {_where(rt)}: "
            "the store was rolled back or lost data; restore it, or re-initialise explicitly (--reinitialise)",
            path=str(getattr(rt.store, "root", "")) or None,
        )


async def _landed_write(rt: BridgeRuntime, intent: WriteIntent) -> tuple[str, ...] | None:
    """The memory a put announced by `intent` stored, if it landed."""
    finder = getattr(rt.store, "find_by_idempotency_key", None)
    if finder is None:
        raise _CannotTell(f"backend {rt.store.name} cannot look writes up by idempotency key")
    memory = await finder(intent.scope, intent.backend_key)
    return None if memory is None else (memory.id,)


async def _landed_forget(rt: BridgeRuntime, intent: WriteIntent) -> tuple[str, ...] | None:
    """The memory a forget announced by `intent` deleted, if the delete landed."""
    try:
        await rt.store.get(intent.scope, intent.backend_key)
    except BackendNotFound:
        await rt.state.manifests.purge_memory_ids({intent.backend_key})  # the step after the delete
        return (intent.backend_key,)
    return None


async def _interrupted_erasure(rt: BridgeRuntime, intent: WriteIntent) -> tuple[str, ...] | None:
    """An erasure that started and never audited its end: say so (a re-run finishes it)."""
    log.error("an erasure of user %s in %s was interrupted; re-run forget_subject to finish it", intent.backend_key, intent.tenant_id)
    return ()  # which memories went before the kill is unknown; the row says it was interrupted


class _CannotTell(Exception):
    """This backend cannot say whether the announced change landed; the intent stays open."""


#: How to tell whether an announced change landed, per audit action of the intent.
_LANDED = {"forget": _landed_forget, "reject": _landed_forget, "expired": _landed_forget, "forget_subject": _interrupted_erasure}


async def reconcile_intents(rt: BridgeRuntime) -> int:
    """Audit every change a crash left unaudited (`recovered`); return how many there were.

    Writes (remember, capture, write-back, promote) are looked up by idempotency key, forgets
    by checking the memory is gone; an interrupted erasure is recorded as such. A change that
    never landed only closes its intent.
    """
    audit, backend = rt.state.audit, rt.store
    recovered = 0
    for intent in await audit.open_intents():
        try:
            landed = await _LANDED.get(intent.action, _landed_write)(rt, intent)
        except (BackendError, _CannotTell) as exc:
            log.warning("could not reconcile intent %s (%s): %s; it stays open", intent.intent_id, intent.action, exc)
            continue
        if landed is None:
            await audit.close_intent(intent.intent_id)
            continue
        marker = await backend.store_marker() if isinstance(backend, StoreBinding) else None
        await audit.recover_intent(intent, landed, marker)
        recovered += 1
        log.warning("recovered an unaudited %s: %s in %s by %s", intent.action, list(landed), intent.scope, intent.actor)
    return recovered


async def open_checks(rt: BridgeRuntime, *, reinitialise: bool = False) -> None:
    await check_store_binding(rt, reinitialise=reinitialise)
    await reconcile_intents(rt)
