"""Who may share what, and who reads a team, as pure functions beside
`bridge/policy/__init__.py`.

Seed 000's vocabulary, mapped onto places so every backend enforces it inside its query:

- `memory_type` is derived, never stored: a team scope (and any other scope a whole audience
  reads: the user's own scope, which every agent of the user reads, workspace, department,
  tenant, global) -> `team`; an agent's or a task's own scope -> `private`; an entry of an
  injection manifest -> `injected`.
- `visible_to` of a private agent (or task) memory = the owning agent plus the audience of its
  share record (`ShareRepository`); `["*"]` for everything else (the whole audience of
  its scope: the team, the workspace, every agent of the user). A reader in the audience gets
  `ScopeEntry(author_scope, memory_ids=<exactly the shared ids>, source=SHARE)`; the data never
  moves, so narrowing is one state update, effective at the next query on every backend.
- Only the owning agent (same tenant, same user) or a tenant admin changes `visible_to`; only
  agents of the same user are ever an audience (a share never crosses users or tenants).
- A team scope is read and written by the team's member agents only (membership is state).

Nothing here reads a request body or any store: the handlers load shares and membership and
pass them in.
"""

from __future__ import annotations

import enum
from typing import Mapping, Sequence

from adapters.base import Status
from adapters.scopes import ReadSource, ScopeEntry, ScopeKey, ScopeSet, Visibility
from bridge.errors import InvalidInput, NotPermitted
from bridge.policy import ROLE_ADMIN, Policy, Role, WriteDecision
from bridge.vocabulary import EVERY_AGENT, NARROWED_TEAM_PREFIX, Purpose
from identity.model import MemoryIdentity

__all__ = [
    "MemoryType", "SHAREABLE", "memory_type_of", "visible_to_of", "write_audience", "check_share_change",
    "with_shares_and_teams", "decide_team_write", "check_team_admin", "private_target", "SHARE_WEIGHT",
    "narrowed_team", "narrowed_base", "has_audience", "reads_team", "decide_narrowed_team_write",
]

#: Visibilities whose memories can carry a selective `visible_to` (an agent's own places).
SHAREABLE = (Visibility.AGENT, Visibility.TASK)
_PERSONAL = (Visibility.PRIVATE, Visibility.AGENT, Visibility.TASK)
#: A memory another agent shared ranks a little below the reader's own agent memory.
SHARE_WEIGHT = 0.9


class MemoryType(str, enum.Enum):
    """Seed 000 section 3: what kind of memory a reader is looking at."""

    TEAM = "team"
    PRIVATE = "private"
    INJECTED = "injected"


def narrowed_team(tenant_id: str, team_id: str) -> ScopeKey:
    """The team's narrowed place: team memory written with an explicit `visible_to`. No member
    reads it in full; the listed agents (and the author) read exactly their memories of it
    through exact-id share entries, enforced inside every backend's query."""
    return ScopeKey.team(tenant_id, NARROWED_TEAM_PREFIX + team_id)


def narrowed_base(key: ScopeKey) -> str | None:
    """The team whose narrowed place `key` is, else None."""
    if key.visibility is Visibility.TEAM and key.owner_id is not None and key.owner_id.startswith(NARROWED_TEAM_PREFIX):
        return key.owner_id[len(NARROWED_TEAM_PREFIX):]
    return None


def has_audience(key: ScopeKey) -> bool:
    """Whether memories of `key` carry a stored audience (an agent's places, a narrowed team)."""
    return key.visibility in SHAREABLE or narrowed_base(key) is not None


def reads_team(identity: MemoryIdentity, key: ScopeKey, teams: frozenset[str]) -> bool:
    """Whether `identity`, a member agent of `teams`, reads the team scope `key` in full: its own
    team's place, never a narrowed place (even if state held a team of that reserved name)."""
    return (key.visibility is Visibility.TEAM and key.tenant_id == identity.tenant_id and key.owner_id in teams
            and narrowed_base(key) is None)


def memory_type_of(key: ScopeKey, source: ReadSource = ReadSource.OWN) -> MemoryType:
    """Seed 000 rules 2 and 3: `private` is what only its creating agent reads (an agent's or a
    task's own place, shared further only by name); everything a whole audience reads — a
    team, a workspace, and also the user's own scope, which every agent of the user reads — is
    `team` (visible_to ["*"])."""
    if source is ReadSource.MANIFEST:
        return MemoryType.INJECTED
    return MemoryType.PRIVATE if key.visibility in SHAREABLE else MemoryType.TEAM


def visible_to_of(key: ScopeKey, audience: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The agents that read a memory of `key` with this share audience (`("*",)` = all of the
    scope's audience)."""
    if narrowed_base(key) is not None:
        return tuple(sorted(audience))  # the listed agents and the author, stored together
    if key.visibility not in SHAREABLE:
        return (EVERY_AGENT,)
    owner = key.owner_id or ""
    if EVERY_AGENT in audience:
        return (owner, EVERY_AGENT)
    return (owner, *sorted(audience - {owner}))


def write_audience(identity: MemoryIdentity, target: ScopeKey, visible_to: Sequence[str] | None) -> frozenset[str]:
    """The share audience a write with `visible_to` records (empty: none). Refuses a list for a
    place whose audience is fixed, and `"*"` mixed with names."""
    if visible_to is None:
        return frozenset()
    names = frozenset(visible_to)
    if EVERY_AGENT in names and len(names) > 1:
        raise InvalidInput('visible_to is either ["*"] or a list of agent ids, not both')
    if target.visibility not in SHAREABLE:
        if names == {EVERY_AGENT}:
            return frozenset()  # already the whole audience of that scope
        raise InvalidInput(
            f"visible_to names agents, but a {target.visibility.value} memory is visible to its whole scope; "
            'write it as memory_type "private" to choose which agents see it'
        )
    return names - {identity.agent_id}


def check_share_change(identity: MemoryIdentity, scope: ScopeKey) -> None:
    """Only the agent owning `scope` (same tenant and user) or an admin of its tenant."""
    if scope.tenant_id != identity.tenant_id:
        raise NotPermitted(f"{identity.principal} may not change visible_to in {scope}: it is not a scope of tenant {identity.tenant_id}")
    if scope.visibility not in SHAREABLE:
        raise NotPermitted(f"a {scope.visibility.value} memory has no selective visible_to; only an agent's private memory is shared by name")
    if identity.has_role(Role.ADMIN):
        return
    if (scope.owner_id, scope.user_id) != (identity.agent_id, identity.user_id):
        raise NotPermitted(f"only agent {scope.owner_id} (or a tenant {ROLE_ADMIN!r}) may change who sees memories of {scope}")


def with_shares_and_teams(
    policy: Policy, identity: MemoryIdentity, purpose: Purpose, base: ScopeSet,
    shares: Mapping[ScopeKey, frozenset[str]], teams: frozenset[str],
) -> ScopeSet:
    """`base` plus the identity's teams and exactly the memories shared with it. A share is
    honoured only for an agent place of the same tenant and user (the store's index already
    says so; this is the second wall), and never narrows a place already readable in full."""
    if not shares and not teams:
        return base
    entries = {e.key: e for e in base}
    t = identity.tenant_id
    for team in sorted(teams):
        if team.startswith(NARROWED_TEAM_PREFIX):
            continue  # a narrowed place is never read in full (second wall: no team has such an id)
        key = ScopeKey.team(t, team)
        if key not in entries or entries[key].memory_ids is not None:
            entries[key] = ScopeEntry(key, policy.scope_weight(purpose, Visibility.TEAM), f"member of team {team}")
    for key, ids in sorted(shares.items(), key=lambda kv: str(kv[0])):
        base_team = narrowed_base(key)
        if base_team is not None:  # narrowed team memory: for current members of that team only
            if key.tenant_id == t and base_team in teams and ids:
                weight = policy.scope_weight(purpose, Visibility.TEAM)
                entries[key] = ScopeEntry(key, weight, f"team {base_team} memory visible to this agent (visible_to)", memory_ids=ids, source=ReadSource.SHARE)
            continue
        if key.tenant_id != t or key.user_id != identity.user_id or key.visibility not in SHAREABLE or not ids:
            continue
        have = entries.get(key)
        if have is not None and have.memory_ids is None:
            continue  # the reader's own place: already readable in full
        if have is not None:  # an injection of the same place: both sets of ids stay readable
            entries[key] = ScopeEntry(key, have.weight, have.reason, have.grant_id, have.memory_ids | ids, have.source, have.injected_by)
            continue
        weight = SHARE_WEIGHT * policy.scope_weight(purpose, key.visibility)
        entries[key] = ScopeEntry(key, weight, f"shared by agent {key.owner_id} (visible_to)", memory_ids=ids, source=ReadSource.SHARE)
    return ScopeSet.from_entries(entries.values())


def decide_team_write(identity: MemoryIdentity, team_id: str | None, member_of: frozenset[str]) -> WriteDecision:
    """Team memory lands in the named team (or the agent's only team) — members only."""
    if team_id is None:
        if not member_of:
            raise NotPermitted(f"team memory: agent {identity.agent_id} is a member of no team (a tenant admin adds it to one)")
        if len(member_of) > 1:
            raise NotPermitted(f"team memory needs team_id: agent {identity.agent_id} is a member of {len(member_of)} teams ({', '.join(sorted(member_of))})")
        (team_id,) = member_of
    if team_id not in member_of:
        raise NotPermitted(f"agent {identity.agent_id} is not a member of team {team_id!r}; only members write team memory")
    return WriteDecision(ScopeKey.team(identity.tenant_id, team_id), Status.ACTIVE, f"team {team_id} memory, written by a member")


def decide_narrowed_team_write(
    identity: MemoryIdentity, team: WriteDecision, visible_to: Sequence[str], members: frozenset[str],
) -> tuple[WriteDecision, frozenset[str]]:
    """Team memory with an explicit `visible_to` (seed 000 3.3): it lands in the team's narrowed
    place, readable by the listed agents and the author. Narrowing never widens: every listed
    agent must be a member of the team."""
    names = frozenset(visible_to)
    if EVERY_AGENT in names:
        raise InvalidInput('visible_to is either ["*"] (the whole team) or a list of agent ids, not both')
    outside = sorted(names - members)
    if outside:
        raise InvalidInput(f"visible_to names agents that are not members of team {team.scope.owner_id}: {', '.join(outside)}")
    team_id = team.scope.owner_id or ""
    if len(NARROWED_TEAM_PREFIX + team_id) > 128:
        raise InvalidInput(f"team id {team_id!r} is too long to narrow its memory to named agents")
    audience = names | {identity.agent_id}
    scope = narrowed_team(identity.tenant_id, team_id)
    return WriteDecision(scope, Status.ACTIVE, f"team {team_id} memory visible to {', '.join(sorted(audience))}"), audience


def check_team_admin(identity: MemoryIdentity) -> None:
    """Team membership is changed by a tenant admin, always in the admin's own tenant."""
    if not identity.has_role(Role.ADMIN):
        raise NotPermitted(f"changing team membership needs the {ROLE_ADMIN!r} role")


def private_target(identity: MemoryIdentity, visibility: Visibility | None) -> Visibility:
    """Where `memory_type: private` lands: the agent's own place (its task's, with a task_id)."""
    if visibility is None:
        return Visibility.TASK if identity.task_id else Visibility.AGENT
    if visibility not in _PERSONAL:
        raise InvalidInput(f'memory_type "private" cannot be written with visibility {visibility.value!r}')
    return visibility
