"""Where a memory lives (`ScopeKey`) and the set of places one request may touch (`ScopeSet`).

A `ScopeKey` is a *place*, not a permission: the bridge's policy decides which keys an identity
may read or write and hands the adapter a `ScopeSet`; the adapter only maps each key to one
backend principal and never widens it. Keys are built from validated ids (see `identity.ids`),
which can never contain `/`, so the string form below is unambiguous and reversible:

    acme/user/u17            private memory of user u17 in tenant acme
    acme/agent/coder/u17     memory owned by agent `coder` acting for user u17
    acme/task/coder/u17/t9   agent `coder`'s working memory for user u17 in task t9 (seed 000 level 3)
    acme/team/red            team red (seed 000 section 5): its member agents read and write it
    acme/ws/alpha            workspace (project) alpha
    acme/dept/eng            department eng
    acme/tenant              the tenant's shared scope
    global                   public memory every tenant may read
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

from adapters.errors import EmptyScopeError, InvalidRequest
from identity.ids import validate_id

__all__ = ["Visibility", "ScopeKey", "ScopeEntry", "ScopeSet", "EmptyScopeSetError", "InvalidScope", "ReadSource", "canonical"]


class Visibility(str, enum.Enum):
    """Who may read a memory. Orthogonal to its *kind* (what the memory is)."""

    PRIVATE = "private"
    AGENT = "agent"
    WORKSPACE = "workspace"
    DEPARTMENT = "department"
    TENANT = "tenant"
    GLOBAL = "global"
    TEAM = "team"  # a team of agents (membership is bridge state, never a memory field)
    TASK = "task"  # one agent's working memory for one user in one task


_SEGMENT = {
    Visibility.PRIVATE: "user",
    Visibility.AGENT: "agent",
    Visibility.WORKSPACE: "ws",
    Visibility.DEPARTMENT: "dept",
    Visibility.TEAM: "team",
}
_VISIBILITY_OF_SEGMENT = {v: k for k, v in _SEGMENT.items()}


#: The same class as `adapters.errors.EmptyScopeError` (one error for one rule); this name is
#: kept for callers that import it from here. An empty ScopeSet: there is no "all scopes".
EmptyScopeSetError = EmptyScopeError


class InvalidScope(InvalidRequest, TypeError):
    """A ScopeKey / ScopeEntry / ScopeSet built from the wrong types. Also a `TypeError` (and,
    through InvalidRequest, a `ValueError`) for plain-Python callers."""


@dataclass(frozen=True, slots=True, order=True)
class ScopeKey:
    """One concrete place a memory lives. Build it with the class methods, not the constructor."""

    visibility: Visibility
    tenant_id: str | None
    owner_id: str | None = None  # user, workspace or department id; the agent id for AGENT
    user_id: str | None = None  # only for AGENT and TASK: whose agent-owned memory this is
    task_id: str | None = None  # only for TASK: which task of that agent
    _hash: int = field(default=0, init=False, repr=False, compare=False)
    _text: str = field(default="", init=False, repr=False, compare=False)  # str(), cached on first use

    def __hash__(self) -> int:
        # computed once: keys are hashed several times per hit on the recall path
        return self._hash

    def __post_init__(self) -> None:
        v = self.visibility
        if not isinstance(v, Visibility):
            raise InvalidScope(f"visibility must be a Visibility, not {v!r}")
        object.__setattr__(self, "_hash", hash((v.value, self.tenant_id, self.owner_id, self.user_id, self.task_id)))
        if self.task_id is not None and v is not Visibility.TASK:
            raise InvalidRequest(f"a {v.value} scope has no task_id")
        if v is Visibility.GLOBAL:
            if self.tenant_id is not None or self.owner_id is not None or self.user_id is not None:
                raise InvalidRequest("the global scope has no tenant or owner")
            return
        validate_id(self.tenant_id, "tenant_id")
        if v is Visibility.TENANT:
            if self.owner_id is not None or self.user_id is not None:
                raise InvalidRequest("the tenant scope has no owner")
            return
        validate_id(self.owner_id, f"{v.value} owner id")
        if v is Visibility.AGENT:
            validate_id(self.user_id, "agent scope user_id")
        elif v is Visibility.TASK:
            validate_id(self.user_id, "task scope user_id")
            validate_id(self.task_id, "task scope task_id")
        elif self.user_id is not None:
            raise InvalidRequest(f"a {v.value} scope has no user_id")

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def private(cls, tenant_id: str, user_id: str) -> "ScopeKey":
        return cls(Visibility.PRIVATE, tenant_id, user_id)

    @classmethod
    def agent(cls, tenant_id: str, agent_id: str, user_id: str) -> "ScopeKey":
        return cls(Visibility.AGENT, tenant_id, agent_id, user_id)

    @classmethod
    def task(cls, tenant_id: str, agent_id: str, user_id: str, task_id: str) -> "ScopeKey":
        return cls(Visibility.TASK, tenant_id, agent_id, user_id, task_id)

    @classmethod
    def team(cls, tenant_id: str, team_id: str) -> "ScopeKey":
        return cls(Visibility.TEAM, tenant_id, team_id)

    @classmethod
    def workspace(cls, tenant_id: str, workspace_id: str) -> "ScopeKey":
        return cls(Visibility.WORKSPACE, tenant_id, workspace_id)

    @classmethod
    def department(cls, tenant_id: str, department_id: str) -> "ScopeKey":
        return cls(Visibility.DEPARTMENT, tenant_id, department_id)

    @classmethod
    def tenant(cls, tenant_id: str) -> "ScopeKey":
        return cls(Visibility.TENANT, tenant_id)

    @classmethod
    def global_(cls) -> "ScopeKey":
        return cls(Visibility.GLOBAL, None)

    @property
    def personal_user_id(self) -> str | None:
        """The user whose personal memory this place is (private, agent-owned, task), else None:
        what erasure by subject deletes outright."""
        if self.visibility is Visibility.PRIVATE:
            return self.owner_id
        if self.visibility in (Visibility.AGENT, Visibility.TASK):
            return self.user_id
        return None

    # -- string form --------------------------------------------------------------------
    def __str__(self) -> str:
        # cached: a recall stringifies the same few keys for every label, audit row and result
        text = self._text
        if not text:
            text = self._format()
            object.__setattr__(self, "_text", text)
        return text

    def _format(self) -> str:
        v = self.visibility
        if v is Visibility.GLOBAL:
            return "global"
        if v is Visibility.TENANT:
            return f"{self.tenant_id}/tenant"
        if v is Visibility.AGENT:
            return f"{self.tenant_id}/agent/{self.owner_id}/{self.user_id}"
        if v is Visibility.TASK:
            return f"{self.tenant_id}/task/{self.owner_id}/{self.user_id}/{self.task_id}"
        return f"{self.tenant_id}/{_SEGMENT[v]}/{self.owner_id}"

    @classmethod
    def parse(cls, text: str) -> "ScopeKey":
        """Inverse of `str()`; raises InvalidRequest (a ValueError) for anything else."""
        if not isinstance(text, str):
            raise InvalidScope(f"a scope key is parsed from a string, not {type(text).__name__}")
        if text == "global":
            return cls.global_()
        parts = text.split("/")
        if len(parts) == 2 and parts[1] == "tenant":
            return cls.tenant(parts[0])
        if len(parts) == 3 and parts[1] in _VISIBILITY_OF_SEGMENT and parts[1] != "agent":
            return cls(_VISIBILITY_OF_SEGMENT[parts[1]], parts[0], parts[2])
        if len(parts) == 4 and parts[1] == "agent":
            return cls.agent(parts[0], parts[2], parts[3])
        if len(parts) == 5 and parts[1] == "task":
            return cls.task(parts[0], parts[2], parts[3], parts[4])
        raise InvalidRequest(f"not a scope key: {text!r}")

    def __repr__(self) -> str:
        return f"ScopeKey({str(self)!r})"


class ReadSource(str, enum.Enum):
    """Why a ScopeSet entry is readable — data the bridge's labels use, never a decision here."""

    OWN = "own"  # one of the identity's default scopes
    GRANT = "grant"  # an explicit, expiring grant (`grant_id` names it)
    MANIFEST = "manifest"  # a parent agent's injection manifest (`grant_id` = manifest id)
    SHARE = "share"  # memories another agent of the same user shared by `visible_to`


@dataclass(frozen=True, slots=True)
class ScopeEntry:
    """One readable place in a ScopeSet, with its ranking weight and why it is readable.

    `grant_id` is set when the entry exists only because of an explicit grant (authorised
    cross-department search, a parent agent's injection); rendered results carry it.
    `memory_ids`, when not None, restricts the entry to exactly those memories (an injection
    manifest): the adapter must not return any other memory of that scope through this entry.
    """

    key: ScopeKey
    weight: float = 1.0
    reason: str = "own scope"
    grant_id: str | None = None
    memory_ids: frozenset[str] | None = None
    source: ReadSource = ReadSource.OWN
    injected_by: str | None = None  # `user@parent_agent` for MANIFEST entries

    def __post_init__(self) -> None:
        if not isinstance(self.key, ScopeKey):
            raise InvalidScope(f"ScopeEntry.key must be a ScopeKey, not {type(self.key).__name__}")
        if not (0.0 <= self.weight <= 1.0):
            raise InvalidRequest(f"scope weight must be within [0, 1], got {self.weight}")
        if self.memory_ids is not None and not self.memory_ids:
            raise EmptyScopeSetError(f"entry {self.key} restricted to an empty set of memory ids")


#: one ScopeKey object per distinct place, shared by every ScopeSet: a recall looks its hits'
#: keys up in its ScopeSet, compares them with the records' keys and finds partitions by them,
#: dozens of times; two equal keys that are not the same object cost a field-by-field comparison
#: (~0.5 us) where the same object is found at once. Keys are immutable, so sharing one is safe.
#: Bounded: when full it starts again, which loses only the shortcut, never an answer.
_CANONICAL: dict[ScopeKey, ScopeKey] = {}
_CANONICAL_MAX = 1 << 16


def canonical(key: ScopeKey) -> ScopeKey:
    """The one shared object equal to `key` (`key` itself the first time)."""
    found = _CANONICAL.get(key)
    if found is None:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        found = _CANONICAL.setdefault(key, key)
    return found


@dataclass(frozen=True, slots=True)
class ScopeSet:
    """The non-empty set of places a request may touch. Each key appears at most once. Its
    entries hold the shared object of each key (`canonical`)."""

    entries: tuple[ScopeEntry, ...]
    _by_key: dict[ScopeKey, ScopeEntry] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        entries = tuple(self.entries)
        if not entries:
            raise EmptyScopeSetError("a ScopeSet must name at least one scope; there is no 'all'")
        by_key: dict[ScopeKey, ScopeEntry] = {}
        for entry in entries:
            if not isinstance(entry, ScopeEntry):
                raise InvalidScope(f"ScopeSet entries must be ScopeEntry, not {type(entry).__name__}")
            if entry.key in by_key:
                raise InvalidRequest(f"scope {entry.key} appears twice in one ScopeSet")
            key = canonical(entry.key)
            if key is not entry.key:
                entry = replace(entry, key=key)
            by_key[key] = entry
        entries = tuple(by_key.values())  # in their order, each with the shared key
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "_by_key", by_key)

    @classmethod
    def of(cls, *keys: ScopeKey | ScopeEntry) -> "ScopeSet":
        return cls(tuple(k if isinstance(k, ScopeEntry) else ScopeEntry(k) for k in keys))

    @classmethod
    def from_entries(cls, entries: Iterable[ScopeEntry]) -> "ScopeSet":
        return cls(tuple(entries))

    @property
    def keys(self) -> tuple[ScopeKey, ...]:
        return tuple(e.key for e in self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[ScopeEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: ScopeKey) -> ScopeEntry | None:
        """The entry for `key`, or None: one dict lookup for hot paths that test and use it."""
        return self._by_key.get(key)

    def entry(self, key: ScopeKey) -> ScopeEntry:
        try:
            return self._by_key[key]
        except KeyError:
            raise KeyError(f"{key} is not in this ScopeSet") from None

    def permits(self, key: ScopeKey, memory_id: str) -> bool:
        """True iff this set lets a reader see memory `memory_id` stored in `key`."""
        entry = self._by_key.get(key)
        if entry is None:
            return False
        return entry.memory_ids is None or memory_id in entry.memory_ids

    def tenants(self) -> frozenset[str | None]:
        return frozenset(k.tenant_id for k in self._by_key)
