"""Recall: ranked, budgeted, labelled memories the identity may read."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.scopes import ScopeKey
from bridge.errors import InvalidInput
from bridge.operations.base import Operation, _set
from bridge.operations.limits import Limits
from bridge.operations.fields import (
    flag, kind, number, optional_ident,
    positive_int, purpose, scope_key, sequence, text, within,
)
from bridge.vocabulary import Purpose



@dataclass(frozen=True, slots=True, kw_only=True)
class Recall(Operation):
    """Ranked, budgeted, labelled memories the identity may read for `query`.

    `include_scopes`: scopes outside the default set, each covered by an active grant (else
    `NotPermitted`). `manifest_id`: an injection manifest issued to this agent. `allow_partial`:
    return what succeeded, marked partial, instead of raising when a scope fails. `min_score`:
    drop memories ranking below it (default: the bridge's relevance floor). `only_scopes`: narrow
    the search to exactly these scopes, each already readable (a default scope, an active grant,
    or the manifest's); it never widens: a scope not readable is `NotPermitted`, an empty tuple
    `InvalidInput`.
    """

    query: str
    purpose: Purpose = Purpose.CHAT
    budget_tokens: int | None = None
    kinds: frozenset[str] | None = None
    include_scopes: tuple[ScopeKey, ...] = ()
    manifest_id: str | None = None
    allow_partial: bool = False
    min_score: float | None = None
    only_scopes: tuple[ScopeKey, ...] | None = None

    def __post_init__(self) -> None:
        # A checked field is set again only when its check answers another object (a purpose
        # given as text, a list of scopes): every recall builds one, and the usual call passes
        # values the checks return as they are, where setting them again costs as much as checking.
        if (checked := text(self.query, "query")) is not self.query:
            _set(self, "query", checked)
        if (checked := purpose(self.purpose)) is not self.purpose:
            _set(self, "purpose", checked)
        if self.budget_tokens is not None:
            _set(self, "budget_tokens", positive_int(self.budget_tokens, "budget_tokens", 1_000_000))
        if self.kinds is not None:
            kinds = frozenset(kind(k).value for k in sequence(self.kinds, "kinds"))
            if not kinds:
                raise InvalidInput("kinds, when given, must name at least one kind")
            _set(self, "kinds", kinds)
        if type(self.include_scopes) is not tuple or self.include_scopes:  # the empty tuple is checked as it is
            _set(self, "include_scopes", tuple(scope_key(s, "include_scopes") for s in sequence(self.include_scopes, "include_scopes")))
        if (checked := optional_ident(self.manifest_id, "manifest_id")) is not self.manifest_id:
            _set(self, "manifest_id", checked)
        if (checked := flag(self.allow_partial, "allow_partial")) is not self.allow_partial:
            _set(self, "allow_partial", checked)
        if self.min_score is not None:
            _set(self, "min_score", number(self.min_score, "min_score", 0.0, 1.0))
        if self.only_scopes is not None:
            only = tuple(dict.fromkeys(scope_key(s, "only_scopes") for s in sequence(self.only_scopes, "only_scopes")))
            if not only:
                raise InvalidInput("only_scopes, when given, must name at least one scope (omit it to search every readable scope)")
            _set(self, "only_scopes", only)

    def check(self, limits: Limits) -> None:
        within(self.query, "query", limits.max_query_chars)
        if len(self.include_scopes) > limits.max_extra_scopes:
            raise InvalidInput(f"include_scopes names {len(self.include_scopes)} scopes; the limit is {limits.max_extra_scopes}")
        if self.only_scopes is not None and len(self.only_scopes) > limits.max_extra_scopes:
            raise InvalidInput(f"only_scopes names {len(self.only_scopes)} scopes; the limit is {limits.max_extra_scopes}")
