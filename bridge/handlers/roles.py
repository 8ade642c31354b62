"""Handler of `RoleInject` (bridge/operations/roles.py): one coordinator turn of seed 002.

The child's role (the loaded role file) -> the router picks the primary and auxiliary domains
among the role's domains -> candidates the PARENT reads through its own default scopes,
narrowed to the child's read layers (depth, seed 000 4.2: minimal = the task's search hits;
standard = those + the project's (workspace) memories; full = those + every memory of those
scopes) -> the planner picks within per-domain tier budgets -> an ordinary `Inject` with exactly
those refs (+ `carry`), which re-checks each ref, the policy and the roles, stores the manifest
and audits it with the route and the counts. The manifest stays the enforcement unit: the child
reads it with `Recall(manifest_id=...)`.

Never widens: no grant and no manifest the parent holds is a source of candidates, and every
ref is checked again by the `Inject` handler.
"""

from __future__ import annotations

from adapters.base import SearchQuery, Status
from adapters.errors import BackendError
from adapters.shared.embedding import relevance_floor
from adapters.scopes import ScopeKey, ScopeSet, Visibility
from bridge.errors import ManifestError, RecallIncomplete, RoleRefused
from bridge.handlers.injection import inject as inject_handler
from bridge.operations import Inject
from bridge.recall.guard import guard_hits
from bridge.operations.roles import RoleInject
from bridge.results import FederatedManifest
from bridge.roles.planner import Candidate, plan_manifest
from bridge.policy import roles as role_rules
from bridge.runtime import BridgeRuntime
from bridge.state.records import InjectDepth
from bridge.vocabulary import Purpose
from identity.model import MemoryIdentity

__all__ = ["role_inject"]

#: memories listed per scope at depth standard/full (a bound on a coordinator turn's work)
LIST_CAP = 2000
PAGE = 500


def _readable_layers(rt: BridgeRuntime, parent: MemoryIdentity, layers: tuple[str, ...]) -> ScopeSet | None:
    own = rt.policy.readable_scopes(parent, Purpose.CODING)
    entries = [e for e in own if e.key.visibility.value in layers and e.memory_ids is None]
    return ScopeSet.from_entries(entries) if entries else None


async def _searched(rt: BridgeRuntime, scopes: ScopeSet, task: str, kinds: frozenset[str] | None) -> list[Candidate]:
    try:
        result = await rt.backend.search(SearchQuery(scopes, task, limit=rt.limits.candidate_limit, kinds=kinds, now=rt.clock()))
    except BackendError as exc:
        if not exc.retryable:
            raise
        raise RecallIncomplete(f"federated injection failed closed: {exc}", tuple(scopes.keys), (str(exc),)) from exc
    if not result.complete:
        raise RecallIncomplete("federated injection failed closed", result.failed_scopes, tuple(result.failure_reasons))
    hits, _ = guard_hits(result.hits, scopes, kinds=kinds)
    floor = relevance_floor(getattr(rt.backend, "embedder", None))  # a semantic space scores unrelated text above 0
    return [Candidate(h.scope, h.memory, h.score) for h in hits if h.score > floor]


async def _listed(rt: BridgeRuntime, key: ScopeKey) -> list[Candidate]:
    out: list[Candidate] = []
    cursor = None
    while len(out) < LIST_CAP:
        page = await rt.backend.list_page(key, cursor=cursor, limit=PAGE, statuses=frozenset({Status.ACTIVE}))
        out += [Candidate(key, m) for m in page.memories if m.scope == key]
        cursor = page.next_cursor
        if cursor is None:
            break
    return out[:LIST_CAP]


async def role_inject(rt: BridgeRuntime, parent: MemoryIdentity, op: RoleInject) -> FederatedManifest:
    book = rt.roles
    if book is None:
        raise RoleRefused("federated injection needs a role file (VIKING_BRIDGE_ROLES_FILE)")
    if op.child_agent_id == parent.agent_id:
        raise ManifestError(f"agent {parent.agent_id} cannot inject memories into itself")
    role_rules.check_inject(book, parent, op.child_agent_id, reinjection=False, grants_reinject=op.may_reinject)
    role = book.role_of(op.child_agent_id)
    if not role.domains:
        raise RoleRefused(f"agent {op.child_agent_id!r} lists no domains (agents.{op.child_agent_id}.domains)")
    route = book.router.route(op.task, role.domains)
    depth = op.depth or InjectDepth(role.depth)
    scopes = _readable_layers(rt, parent, role.read_layers)
    candidates: list[Candidate] = []
    if scopes is not None:
        kinds = None if role.allowed_kinds is None else frozenset(k.value for k in role.allowed_kinds)
        candidates += await _searched(rt, scopes, op.task, kinds)
        if depth is not InjectDepth.MINIMAL:
            listed = scopes.keys if depth is InjectDepth.FULL else [k for k in scopes.keys if k.visibility is Visibility.WORKSPACE]
            for key in listed:
                candidates += await _listed(rt, key)
    plan = plan_manifest(role, route, candidates, book.roles.budgets_for(op.child_agent_id))
    refs = list(plan.refs) + [r for r in op.carry if r not in plan.refs]
    if not refs:
        raise ManifestError(f"nothing to inject: no memory of domains {list(route.domains)} in the tiers {list(role.tiers)} of {op.child_agent_id}'s role")
    inner = Inject(child_agent_id=op.child_agent_id, task=op.task, depth=depth, memory_refs=tuple(refs), ttl_seconds=op.ttl_seconds, may_reinject=op.may_reinject)
    inner.check(rt.limits)
    detail = {"route": {"primary": route.primary, "auxiliary": list(route.auxiliary)}, "counts": plan.counts, "carried": len(op.carry)}
    manifest = await inject_handler(rt, parent, inner, detail=detail)
    return FederatedManifest(manifest, route, plan, depth, tuple(op.carry))

