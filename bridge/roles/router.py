"""Intent routing: task text -> the primary domain (full budget) and auxiliary domains (x0.5).

`IntentRouter` is the seam (seed 002's 意图路由器): anything with `route(task, domains)` can
replace the default. `KeywordRouter` is deterministic — case-folded substring matches of each
domain's keywords, most matches wins, ties go to the role's earlier domain — so the same task
gives the same manifest on every run. A router only chooses among the role's own domains; it
never adds one the role does not list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence, runtime_checkable

from bridge.errors import RoleRefused
from bridge.roles.model import DomainRule

__all__ = ["IntentRouter", "KeywordRouter", "Route"]


@dataclass(frozen=True)
class Route:
    """`primary` gets the full budget; each of `auxiliary` the auxiliary share. `scores` says why."""

    primary: str
    auxiliary: tuple[str, ...] = ()
    scores: Mapping[str, float] = field(default_factory=dict)

    @property
    def domains(self) -> tuple[str, ...]:
        return (self.primary, *self.auxiliary)


@runtime_checkable
class IntentRouter(Protocol):
    def route(self, task: str, domains: Sequence[str]) -> Route:
        """Choose the primary and auxiliary domains for `task` among `domains` (non-empty)."""
        ...


class KeywordRouter:
    """The default router: keyword rules per domain, from the role file's `[router.domains]`.

    A domain matching no keyword is not auxiliary; a task matching none of the role's domains
    is routed to the role's home domain (its first), with no auxiliary domain."""

    def __init__(self, rules: Mapping[str, DomainRule]) -> None:
        self._keywords = {name: rule.keywords for name, rule in rules.items()}

    def score(self, task: str, domain: str) -> int:
        text = task.casefold()
        return sum(1 for k in self._keywords.get(domain, ()) if k in text)

    def route(self, task: str, domains: Sequence[str]) -> Route:
        if not domains:
            raise RoleRefused("this role lists no domains: nothing to route the task to")
        scores = {d: float(self.score(task, d)) for d in domains}
        order = {d: n for n, d in enumerate(domains)}
        ranked = sorted(domains, key=lambda d: (-scores[d], order[d]))
        primary = ranked[0]
        auxiliary = tuple(d for d in ranked[1:] if scores[d] > 0)
        return Route(primary, auxiliary, scores)
