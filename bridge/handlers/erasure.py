"""Handler of forget-by-subject (GDPR erasure): every memory by or about one user, any size.

Walks every scope of the tenant page by page (`list_page`), so no scope is too large to erase
and one member filling a workspace cannot block anybody's erasure. The subject's private and
agent scopes go entirely; in shared scopes, memories authored by or about the subject go; in
the global scope, those this tenant wrote by or about the subject. Then adapter bookkeeping,
manifests and grants. It is idempotent — a re-run after an interruption finishes the job —
and one `forget_subject` audit row always records what was removed, with `complete` false and
the error when it stopped early; a process killed mid-erasure leaves an intent that the next
open audits as an interrupted erasure.
"""

from __future__ import annotations

import logging
from typing import AsyncIterator

from adapters.base import StoredMemory, SubjectEraser
from adapters.scopes import ScopeKey
from bridge.operations import ForgetSubject
from bridge.runtime import BridgeRuntime
from bridge.handlers.lifecycle import author_tenant
from bridge.writes import release_memories
from identity.model import MemoryIdentity

__all__ = ["forget_subject", "PAGE_SIZE"]

log = logging.getLogger("viking_bridge")
PAGE_SIZE = 500


async def _pages(rt: BridgeRuntime, key: ScopeKey) -> AsyncIterator[tuple[StoredMemory, ...]]:
    cursor: str | None = None
    while True:
        page = await rt.store.list_page(key, cursor=cursor, limit=PAGE_SIZE)
        if page.memories:
            yield page.memories
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def forget_subject(rt: BridgeRuntime, identity: MemoryIdentity, op: ForgetSubject) -> int:
    subject, tenant = op.subject_user_id, identity.tenant_id
    rt.policy.may_erase_subject(identity, subject)
    removed: list[str] = []
    touched: set[ScopeKey] = set()
    detail: dict[str, object] = {"subject": subject}

    # announced first: a process killed mid-erasure leaves an intent the next open audits
    intent = await rt.state.audit.begin_intent(identity, "forget_subject", ScopeKey.tenant(tenant), subject)

    def about_subject(m: StoredMemory) -> bool:
        return subject in (m.subject_user_id, m.provenance.author_user_id)

    async def erase(key: ScopeKey, doomed: list[StoredMemory]) -> None:
        for memory in doomed:
            if await rt.store.delete(key, memory.id):
                await release_memories(rt, [memory])  # its quota space is free again
            removed.append(memory.id)
            touched.add(key)

    try:
        if rt.policy.includes_global_of(tenant):
            async for page in _pages(rt, ScopeKey.global_()):
                await erase(ScopeKey.global_(), [m for m in page if author_tenant(m) == tenant and about_subject(m)])
        for key in await rt.store.list_scopes(tenant):
            whole = key.personal_user_id == subject  # private, agent-owned and task scopes of the subject
            async for page in _pages(rt, key):
                await erase(key, list(page) if whole else [m for m in page if about_subject(m)])
        if isinstance(rt.store, SubjectEraser):  # adapter bookkeeping (capture records, registries)
            detail["backend_traces"] = await rt.store.erase_subject_traces(tenant, subject)
        await rt.state.manifests.purge_memory_ids(set(removed))
        detail["manifests"] = await rt.state.manifests.purge_user(tenant, subject)  # task texts are personal data too
        detail["grants"] = await rt.state.grants.purge_grantee(tenant, subject)
        detail["shares"] = await rt.state.shares.purge_user(tenant, subject) + await rt.state.shares.purge_memory_ids(set(removed))
        detail["complete"] = True
    except BaseException as exc:
        detail.update(complete=False, stopped_by=type(exc).__name__, error=str(exc)[:300])
        raise
    finally:
        detail["count"] = len(removed)
        try:
            await rt.state.audit.append(identity, "forget_subject", memory_ids=removed, scopes=sorted(touched), detail=detail, closes_intent=intent)
        except Exception:  # never mask why the erasure stopped
            log.exception("could not audit the erasure of %s (%d memories removed)", subject, len(removed))
            if detail.get("complete"):
                raise
    return len(removed)
