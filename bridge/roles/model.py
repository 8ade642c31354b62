"""The role file's schema (pydantic): one `AgentRole` per agent, budgets, router rules.

Seed 002's `AgentMemoryScope` table, as data:

    agent                domains                    tiers      budget multiplier
    intent               purchasing                 hot/warm   0.8
    ontology             code-arch + purchasing     hot/warm   1.0
    simulation-verifier  purchasing                 hot        0.6

A memory's domain and tier are metadata keys set when it is written (`DOMAIN_KEY`, `TIER_KEY`;
a memory without a tier is `warm`, one without a domain is in no domain and never routed).
This module validates shape and cross-references only; it never reads a file (loader.py) and
never decides a permission (bridge/policy/roles.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bridge.vocabulary import TIER_KEY, Kind
from bridge.vocabulary import TIERS as VOCABULARY_TIERS
from identity.ids import InvalidIdError, validate_id

__all__ = ["AgentRole", "Budgets", "DomainRule", "RoleFile", "Tier", "Layer", "TIERS", "DOMAIN_KEY", "TIER_KEY", "DEFAULT_TIER", "ANY_AGENT"]

Tier = Literal["hot", "warm", "cold"]  # = bridge.vocabulary.TIERS, which writes are checked against
TIERS: tuple[Tier, ...] = VOCABULARY_TIERS  # type: ignore[assignment]
#: The layers of the bridge a role reads from / writes into: the visibilities of a memory's scope.
Layer = Literal["private", "agent", "team", "workspace", "department", "tenant", "global"]
DOMAIN_KEY, DEFAULT_TIER = "domain", "warm"
ANY_AGENT = "*"

_STRICT = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _agent_id(value: str, what: str) -> str:
    if value == ANY_AGENT:
        return value
    try:
        return validate_id(value, what)
    except InvalidIdError as exc:
        raise ValueError(str(exc)) from None


class Budgets(BaseModel):
    """Slots per domain and tier before multipliers (seed 002: hot/warm/cold/reserve). The
    primary domain gets `slots x multiplier`, each auxiliary domain `slots x multiplier x
    auxiliary_share`, rounded down; `reserve` slots take the best leftovers of any tier the role reads."""

    model_config = _STRICT
    hot: int = Field(4, ge=0, le=1000)
    warm: int = Field(3, ge=0, le=1000)
    cold: int = Field(2, ge=0, le=1000)
    reserve: int = Field(2, ge=0, le=1000)
    auxiliary_share: float = Field(0.5, gt=0.0, le=1.0)


class DomainRule(BaseModel):
    """The default router's rule for one domain: any keyword in the task text (case-folded
    substring) counts one; the domain with most matches is primary."""

    model_config = _STRICT
    keywords: tuple[str, ...] = Field(min_length=1)
    description: str = ""

    @field_validator("keywords")
    @classmethod
    def _non_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not k.strip() for k in value):
            raise ValueError("keywords must not be empty strings")
        return tuple(k.strip().casefold() for k in value)


class AgentRole(BaseModel):
    """One agent's memory scope (seed 002) and what it may do in the DAG (seed 000)."""

    model_config = _STRICT
    domains: tuple[str, ...] = Field(default=(), description="semantic domains, home domain first")
    tiers: tuple[Tier, ...] = Field(default=("hot", "warm"), min_length=1)
    read_layers: tuple[Layer, ...] = Field(default=("agent", "workspace"), min_length=1)
    write_layers: tuple[Layer, ...] = Field(default=("agent", "workspace"))
    budget_multiplier: float = Field(1.0, gt=0.0, le=10.0)
    allowed_kinds: tuple[Kind, ...] | None = None  # None: every kind
    teams: tuple[str, ...] = ()
    may_inject_into: tuple[str, ...] = ()
    may_reinject: bool = False
    depth: Literal["minimal", "standard", "full"] = "standard"
    budgets: Budgets | None = None  # this agent's own budgets (default: the file's)
    description: str = ""

    @field_validator("tiers", "read_layers", "write_layers", "domains", "teams")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("lists each value at most once")
        return value

    @field_validator("teams")
    @classmethod
    def _team_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for team in value:
            try:
                validate_id(team, "team id")
            except InvalidIdError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("may_inject_into")
    @classmethod
    def _targets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_agent_id(v, "may_inject_into") for v in value)


class RoleFile(BaseModel):
    """The whole file: `version`, `[budgets]`, `[router.domains.<name>]`, `[agents.<agent_id>]`."""

    model_config = _STRICT
    version: Literal[1] = 1
    #: tenants whose teams take this file's membership when the bridge opens (bridge/roles/teams.py)
    team_tenants: tuple[str, ...] = ()
    budgets: Budgets = Field(default_factory=Budgets)
    router: dict[Literal["domains"], dict[str, DomainRule]] = Field(default_factory=dict)
    agents: dict[str, AgentRole] = Field(min_length=1)

    @field_validator("agents")
    @classmethod
    def _agent_names(cls, value: dict[str, AgentRole]) -> dict[str, AgentRole]:
        for name in value:
            if name == ANY_AGENT:
                raise ValueError("'*' is not an agent id")
            _agent_id(name, "agent id")
        return value

    @field_validator("team_tenants")
    @classmethod
    def _tenant_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tenant in value:
            try:
                validate_id(tenant, "tenant id")
            except InvalidIdError as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def domain_rules(self) -> dict[str, DomainRule]:
        return self.router.get("domains", {})

    @model_validator(mode="after")
    def _references(self) -> "RoleFile":
        # raised as ValueError with the location first, so the loader can name the field
        for name, role in self.agents.items():
            for n, domain in enumerate(role.domains):
                if domain not in self.domain_rules:
                    raise ValueError(f"@agents.{name}.domains.{n}: domain {domain!r} has no [router.domains.{domain}] rule")
            for n, target in enumerate(role.may_inject_into):
                if target == name:
                    raise ValueError(f"@agents.{name}.may_inject_into.{n}: an agent never injects into itself")
                if target != ANY_AGENT and target not in self.agents:
                    raise ValueError(f"@agents.{name}.may_inject_into.{n}: unknown agent {target!r} (not in [agents])")
        return self

    def budgets_for(self, agent_id: str) -> Budgets:
        role = self.agents[agent_id]
        return role.budgets or self.budgets
