"""Handlers of injection manifests: a parent agent hands a child exactly the memories of a task.

Seeds 000 and 002: a child sees its own memory, team (workspace) memory, and exactly what its
parent injected — marked `injected_by`, read-only, nothing else of the parent's. Only memories
the parent itself reads through its own scopes can be injected (or, for a re-injection the
source manifest allows, exactly memories of that manifest); a re-injection never outlives its
source, cannot be passed on again, and dies with it (`revoke_tree`, `check_manifest_use`).
Expired and revoked manifests are purged as new ones are made; each user's agents hold at most
`Limits.max_active_manifests_per_user` live manifests.
"""

from __future__ import annotations

import uuid

from adapters.base import SearchQuery, Status
from adapters.errors import BackendError
from adapters.scopes import ScopeKey, Visibility
from adapters.shared.embedding import relevance_floor
from bridge.errors import ManifestError, NotPermitted, RecallIncomplete
from bridge.operations import Inject, RevokeManifest
from bridge.recall.guard import guard_hits
from bridge.recall.scopes import load_manifest_for
from bridge.policy import roles as role_rules
from bridge.runtime import BridgeRuntime
from bridge.state.records import InjectDepth, InjectionManifest
from bridge.vocabulary import Purpose
from identity.model import MemoryIdentity

__all__ = ["inject", "revoke_manifest"]

PURGE_BATCH = 100


async def _entries_by_reference(rt: BridgeRuntime, parent: MemoryIdentity, op: Inject, source: InjectionManifest | None) -> list[tuple[ScopeKey, str]]:
    assert op.memory_refs is not None
    allowed = set(source.entries) if source else None
    own = {k for k, _ in rt.policy.own_scopes(parent)}
    entries = []
    for key, memory_id in op.memory_refs:
        if allowed is not None:
            if (key, memory_id) not in allowed:
                raise ManifestError(f"{key}#{memory_id} is not in manifest {op.from_manifest_id}")
        elif key not in own:
            raise ManifestError(f"{parent.principal} cannot inject {key}#{memory_id}: it is not readable through the parent's own scopes")
        memory = await rt.backend.get(key, memory_id)
        if memory.status is not Status.ACTIVE:
            raise ManifestError(f"{key}#{memory_id} is {memory.status.value}; only active memories can be injected")
        entries.append((key, memory_id))
    return entries


#: memories listed per scope for depth standard/full (a bound on one injection's work)
LIST_PAGE = 200
#: "directly about the task": a search hit scoring at least this share of the best hit's score
#: (a semantic space scores loosely related text well above its floor, so the floor alone is not enough)
TASK_RELEVANCE = 0.5


async def _entries_by_search(rt: BridgeRuntime, parent: MemoryIdentity, op: Inject) -> list[tuple[ScopeKey, str]]:
    """Seed 000 4.2's depths, each a superset of the one before, all from the parent's own
    default scopes: minimal = the memories directly about the task (its search hits above the
    embedder's relevance floor and within `TASK_RELEVANCE` of the best one); standard = those + the project's context (every live memory of
    the parent's current workspace); full = those + every live memory the parent reads by default
    (so everything it may hand on). At most `Limits.max_memory_refs`, task hits first."""
    scopes = rt.policy.readable_scopes(parent, Purpose.CHAT)
    try:
        result = await rt.backend.search(SearchQuery(scopes, op.task, limit=op.depth.limit, now=rt.clock()))
    except BackendError as exc:  # the whole fan-out failed: the same type as one failed scope, so a caller handles one error
        if not exc.retryable:
            raise
        raise RecallIncomplete(f"injection search failed closed: the backend could not search any scope: {exc}", tuple(scopes.keys), (str(exc),)) from exc
    if not result.complete:
        raise RecallIncomplete("injection search failed closed", result.failed_scopes, tuple(result.failure_reasons))
    hits, _ = guard_hits(result.hits, scopes)
    floor = relevance_floor(getattr(rt.backend, "embedder", None))  # a semantic space scores unrelated text above 0
    hits = [h for h in hits if h.score > floor]  # expired hits never arrive: rt.backend is the live view
    best = max((h.score for h in hits), default=0.0)
    entries = [(h.scope, h.memory.id) for h in hits if h.score >= TASK_RELEVANCE * best]
    if op.depth is InjectDepth.MINIMAL:
        return entries
    if op.depth is InjectDepth.STANDARD:
        context = [e.key for e in scopes if e.key.visibility is Visibility.WORKSPACE and e.memory_ids is None]
    else:
        context = [e.key for e in scopes if e.memory_ids is None]
    cap, seen = rt.limits.max_memory_refs, set(entries)
    for key in context:
        cursor = None
        while len(entries) < cap:
            page = await rt.backend.list_page(key, cursor=cursor, limit=LIST_PAGE, statuses=frozenset({Status.ACTIVE}))
            for m in page.memories:
                ref = (key, m.id)
                if m.scope == key and m.status is Status.ACTIVE and ref not in seen and len(entries) < cap:
                    entries.append(ref)
                    seen.add(ref)
            cursor = page.next_cursor
            if cursor is None:
                break
    return entries


async def inject(rt: BridgeRuntime, parent: MemoryIdentity, op: Inject, *, detail: dict[str, object] | None = None) -> InjectionManifest:
    source = None if op.from_manifest_id is None else await load_manifest_for(rt, parent, op.from_manifest_id)
    rt.policy.check_inject(parent, op.child_agent_id, source)
    if rt.roles is not None:  # a loaded role file narrows who may inject into whom (bridge/policy/roles.py)
        role_rules.check_inject(rt.roles, parent, op.child_agent_id, reinjection=source is not None, grants_reinject=op.may_reinject and source is None)
    if op.memory_refs is not None:
        entries = await _entries_by_reference(rt, parent, op, source)
    elif source is not None:
        raise ManifestError("re-injection must name the memories to pass on (memory_refs)")
    else:
        entries = await _entries_by_search(rt, parent, op)
    if not entries:
        raise ManifestError("nothing to inject: the parent may read none of the requested memories for this task")
    manifests, now = rt.state.manifests, rt.clock()
    await manifests.purge_expired(now, PURGE_BATCH)
    cap = rt.limits.max_active_manifests_per_user
    if await manifests.count_active(parent.tenant_id, parent.user_id, now) >= cap:
        raise NotPermitted(f"{parent.principal} already holds {cap} live manifests; revoke some or let them expire")
    expires = now + op.ttl_seconds if source is None else min(now + op.ttl_seconds, source.expires_at)
    manifest = InjectionManifest(
        uuid.uuid4().hex, parent.tenant_id, parent.user_id, parent.agent_id, op.child_agent_id, op.task, op.depth,
        tuple(entries), op.may_reinject and source is None, now, expires, parent_manifest_id=source.manifest_id if source else None,
    )
    await manifests.add(manifest)
    await rt.state.audit.append(
        parent, "inject", memory_ids=manifest.memory_ids, scopes=[k for k, _ in entries], grant_ids=[manifest.manifest_id],
        detail={"child": op.child_agent_id, "depth": op.depth.value, "from_manifest": op.from_manifest_id, **(detail or {})},
    )
    return manifest


async def revoke_manifest(rt: BridgeRuntime, identity: MemoryIdentity, op: RevokeManifest) -> None:
    manifest = await rt.state.manifests.get(op.manifest_id)
    chain = await rt.state.manifests.chain(manifest) if manifest is not None else []
    rt.policy.check_manifest_revoke(identity, manifest, chain, op.manifest_id)
    ended = await rt.state.manifests.revoke_tree(op.manifest_id, rt.clock())
    await rt.state.audit.append(identity, "revoke", grant_ids=[op.manifest_id], detail={"manifest": op.manifest_id, "ended": ended})
