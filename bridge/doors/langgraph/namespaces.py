"""LangGraph namespaces -> the bridge's scopes, for one verified identity.

A namespace is `(head, owner, *sub)`. The head says which kind of scope; the owner (optional in
the one-label short form) names whose, and must be the caller's own — the identity comes from the
credential, the namespace may only *name* it, never choose it. `sub` labels are free-form
sub-namespaces kept verbatim on each item (they never change the scope).

    namespace                         scope (tenant t, user u, agent a of the identity)
    ("memories",) / ("memories", u, ...)    t/user/u            the caller's private memory
    ("agent",)    / ("agent", a, ...)       t/agent/a/u         this agent's memory for this user
    ("workspace",)/ ("workspace", w, ...)   t/ws/w              the session's workspace; another
                                                                 workspace only to read, and only
                                                                 if a grant lets the bridge read it
    ("department", d, ...)                  t/dept/d            a department the caller may read
                                                                 (writes: members, pending unless
                                                                 approver — the policy decides)
    ("department",)                         the caller's only department (refused if not one)
    ("tenant",)   / ("tenant", t, ...)      t/tenant            the tenant's shared scope (writes:
                                                                 admins only)
    ("global", ...)                         global              read; writes need a global writer

Refused with a typed error, never rewritten: `("memories", "bob")` for alice (NamespaceRefused),
`("tenant", "globex")` for acme, `("agent", "other")`, a write to another workspace, an unknown
head (UnknownNamespace). The empty namespace `()` means "every scope this identity reads by
default" and is accepted by `search` and `list_namespaces` only.

This module decides nothing the policy decides: it maps a name to a place, refuses names of other
identities outright, and leaves every permission (grants, roles, membership) to the bridge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from langgraph.store.base import MatchCondition

from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput
from bridge.doors.langgraph.errors import NamespaceRefused, UnknownNamespace, UnsupportedStoreOperation
from identity.model import MemoryIdentity

__all__ = ["Target", "HEADS", "resolve", "namespace_of_scope", "default_namespaces", "labels_scope"]

HEADS = ("memories", "agent", "workspace", "department", "tenant", "global")


@dataclass(frozen=True, slots=True)
class Target:
    """Where a namespace lives: its scope, the visibility and department a write asks for."""

    namespace: tuple[str, ...]
    scope: ScopeKey
    visibility: Visibility
    department_id: str | None = None


def _check_labels(namespace: object) -> tuple[str, ...]:
    if not isinstance(namespace, tuple) or not all(isinstance(x, str) and x for x in namespace):
        raise InvalidInput(f"a namespace is a tuple of non-empty strings, got {namespace!r}")
    return namespace


def _own(label: str, owner: str | None, mine: str | None, what: str) -> str:
    if owner is None:
        if mine is None:
            raise NamespaceRefused(f"namespace ({label!r},) needs a {what}, and the authenticated session has none")
        return mine
    if owner != mine:
        raise NamespaceRefused(f"namespace ({label!r}, {owner!r}, ...) names another {what}; a namespace may only name the caller's own")
    return owner


def resolve(namespace: tuple[str, ...], identity: MemoryIdentity, *, for_write: bool = False) -> Target:
    """The scope `namespace` names for `identity`; `NamespaceRefused`/`UnknownNamespace` if none."""
    ns = _check_labels(namespace)
    if not ns:
        raise UnknownNamespace("the empty namespace names no single scope (search and list_namespaces accept it)")
    head, owner = ns[0], (ns[1] if len(ns) > 1 else None)
    t = identity.tenant_id
    if head == "memories":
        user = _own(head, owner, identity.user_id, "user")
        return Target(ns, ScopeKey.private(t, user), Visibility.PRIVATE)
    if head == "agent":
        agent = _own(head, owner, identity.agent_id, "agent")
        return Target(ns, ScopeKey.agent(t, agent, identity.user_id), Visibility.AGENT)
    if head == "tenant":
        _own(head, owner, t, "tenant")
        return Target(ns, ScopeKey.tenant(t), Visibility.TENANT)
    if head == "global":
        return Target(ns, ScopeKey.global_(), Visibility.GLOBAL)
    if head == "workspace":
        if owner is None or for_write:
            _own(head, owner, identity.workspace_id, "workspace (writes land only in the session's workspace)")
        ws = owner or identity.workspace_id
        if ws is None:
            raise NamespaceRefused("namespace ('workspace',) needs a workspace, and the authenticated session has none")
        return Target(ns, _scope(lambda: ScopeKey.workspace(t, ws)), Visibility.WORKSPACE)
    if head == "department":
        if owner is None:
            if len(identity.department_ids) != 1:
                raise NamespaceRefused(f"namespace ('department',) needs a department id: the identity belongs to {len(identity.department_ids)} departments")
            owner = next(iter(identity.department_ids))
        dept = owner
        return Target(ns, _scope(lambda: ScopeKey.department(t, dept)), Visibility.DEPARTMENT, department_id=dept)
    raise UnknownNamespace(f"namespace head {head!r} maps to no scope; expected one of: {', '.join(HEADS)}")


def _scope(build: Callable[[], ScopeKey]) -> ScopeKey:
    try:
        return build()
    except ValueError as exc:  # a label that breaks the id grammar
        raise InvalidInput(f"namespace label is not a valid id: {exc}") from None


def namespace_of_scope(scope: ScopeKey) -> tuple[str, ...]:
    """The canonical (head, owner) namespace of a scope: how an item found by a search is labelled
    when it was not written through the store (its label says where it came from)."""
    v = scope.visibility
    if v is Visibility.PRIVATE:
        return ("memories", str(scope.owner_id))
    if v is Visibility.AGENT:
        return ("agent", str(scope.owner_id))
    if v is Visibility.WORKSPACE:
        return ("workspace", str(scope.owner_id))
    if v is Visibility.DEPARTMENT:
        return ("department", str(scope.owner_id))
    if v is Visibility.TENANT:
        return ("tenant", str(scope.tenant_id))
    return ("global",)


# Team and task scopes have no store namespace (None): a memory read from one of them, even one
# shaped like a store item, is not a store item (a whole-store search does search them for an
# identity in a team or a task, so they must be in the table rather than a KeyError).
_HEAD_OF: dict[Visibility, str | None] = {
    Visibility.PRIVATE: "memories", Visibility.AGENT: "agent", Visibility.WORKSPACE: "workspace",
    Visibility.DEPARTMENT: "department", Visibility.TENANT: "tenant", Visibility.GLOBAL: "global",
    Visibility.TEAM: None, Visibility.TASK: None,
}


def labels_scope(namespace: tuple[str, ...], scope: ScopeKey) -> bool:
    """Does an item's recorded namespace describe the scope the bridge read it from? An item
    whose namespace claims another place (written by someone into a shared scope with a
    ("memories", "alice") label) is no store item there: its label would lie about its source."""
    head = _HEAD_OF[scope.visibility]
    if head is None or not namespace or namespace[0] != head:
        return False
    if len(namespace) < 2 or scope.visibility is Visibility.GLOBAL:
        return True
    owner = scope.tenant_id if scope.visibility is Visibility.TENANT else scope.owner_id
    return namespace[1] == owner


def default_namespaces(identity: MemoryIdentity) -> list[Target]:
    """The scopes an identity reads by default, as store targets (the empty namespace's meaning)."""
    out = [resolve(("memories",), identity), resolve(("agent",), identity)]
    if identity.workspace_id:
        out.append(resolve(("workspace",), identity))
    out.extend(resolve(("department", d), identity) for d in sorted(identity.department_ids))
    out.append(resolve(("tenant",), identity))
    return out


def has_prefix(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


def path_matches(namespace: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(namespace) >= len(path) and all(p == "*" or p == n for p, n in zip(path, namespace))


def matches_condition(namespace: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if cond.match_type == "prefix":
        return path_matches(namespace, path)
    if cond.match_type == "suffix":
        return path_matches(tuple(reversed(namespace)), tuple(reversed(path)))
    raise UnsupportedStoreOperation(f"unknown namespace match type {cond.match_type!r}")
