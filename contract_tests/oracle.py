"""Random worlds and an independent oracle for "may X read m" (and "where does X's write land").

Deliberately small and written from the rules in DESIGN.md / seed 003, NOT from `bridge.policy`
(it imports nothing from `bridge`): if the policy and the oracle disagree, one of them is wrong,
and the property test says which memory, which identity and which world.

A world is a pure function of its seed (`build_world(seed)`), so a failure's seed replays it
exactly (`--contract-seed SEED`). Ids deliberately include escaping traps and prefixes
(`ann` / `ann_` / `anna` / `a%n`, `eng` / `eng_`, unicode).

Multi-agent, drawn from a second generator seeded by the same seed so the worlds of
the first part stay what they were: tasks some people work in (from their credential), teams of
agents per tenant (loaded with `apply_team_membership`), writes with `memory_type` /
`visible_to` / `team_id`, and later changes of `visible_to` by their owner, an admin or an
intruder. The rules, from seed 000: a private agent memory is read by its agent, and by the
agents of the same user it names; team memory by the team's member agents; a task's working
memory by that agent in that task only.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

TENANTS = ("t0", "t1")
# Only these tenants' global_admins may write the global scope (mirrors the deployment setting
# PolicyConfig.global_writer_tenants that the harness configures).
GLOBAL_WRITER_TENANTS = ("t0",)
USERS = ("ann", "ann_", "anna", "a%n", "zoë")
AGENTS = ("assistant", "coder")
DEPARTMENTS = ("eng", "eng_", "研发部")
WORKSPACES = ("alpha", "alpha.1")
KINDS = ("profile", "preference", "event", "note", "fact", "decision", "procedure", "experience", "standard")
VISIBILITIES = (None, None, None, "private", "agent", "workspace", "department", "tenant", "global")
WORDS = ("canary", "ledger", "orbit", "quartz", "harbor", "violet", "tundra", "saffron", "glacier", "mosaic", "ember", "falcon")

DEFAULT_VISIBILITY = {
    "profile": "private", "preference": "private", "event": "private", "note": "private",
    "fact": "workspace", "decision": "workspace",
    "procedure": "agent", "experience": "agent",
    "standard": "department",
}


@dataclass(frozen=True)
class Person:
    tenant: str
    user: str
    agent: str
    departments: tuple[str, ...]
    workspace: str | None
    roles: tuple[str, ...]
    task: str | None = None

    def __str__(self) -> str:
        task = f" task={self.task}" if self.task else ""
        return f"{self.tenant}/{self.user}@{self.agent} depts={list(self.departments)} ws={self.workspace} roles={list(self.roles)}{task}"


@dataclass(frozen=True)
class Write:
    writer: int
    content: str
    kind: str
    visibility: str | None
    department_id: str | None
    memory_type: str | None = None
    visible_to: tuple[str, ...] | None = None
    team_id: str | None = None


@dataclass(frozen=True)
class ShareChange:
    """After the writes: person `by` sets visible_to of write `write`."""

    by: int
    write: int
    visible_to: tuple[str, ...]


@dataclass(frozen=True)
class GrantSpec:
    admin: int
    grantee_user: str
    scope: str
    revoke: bool


@dataclass(frozen=True)
class RecallSpec:
    reader: int
    query: str
    exact_of: int | None  # index of the write whose content is the query
    purpose: str
    kinds: tuple[str, ...] | None
    include: tuple[str, ...]


@dataclass
class World:
    seed: int
    people: list[Person]
    writes: list[Write]
    grants: list[GrantSpec]
    recalls: list[RecallSpec] = field(default_factory=list)
    teams: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)  # (tenant, team) -> agents
    share_changes: list[ShareChange] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"world seed={self.seed}"]
        lines += [f"  person {i}: {p}" for i, p in enumerate(self.people)]
        lines += [f"  write {i}: by person {w.writer} kind={w.kind} visibility={w.visibility} dept={w.department_id} {w.content!r}" for i, w in enumerate(self.writes)]
        lines += [f"  grant: admin person {g.admin} -> user {g.grantee_user} on {g.scope}{' (then revoked)' if g.revoke else ''}" for g in self.grants]
        lines += [f"  team {t}/{team}: {sorted(agents)}" for (t, team), agents in sorted(self.teams.items())]
        lines += [f"  write {i} sharing: memory_type={w.memory_type} visible_to={w.visible_to} team_id={w.team_id}" for i, w in enumerate(self.writes) if (w.memory_type, w.visible_to, w.team_id) != (None, None, None)]
        lines += [f"  share change: person {c.by} sets visible_to of write {c.write} to {list(c.visible_to)}" for c in self.share_changes]
        return "\n".join(lines)


def build_world(seed: int) -> World:
    rnd = random.Random(seed)
    people = []
    for _ in range(rnd.randint(3, 6)):
        roles = tuple(r for r, p in (("admin", 0.25), ("approver", 0.3), ("global_admin", 0.1)) if rnd.random() < p)
        people.append(Person(
            tenant=rnd.choice(TENANTS), user=rnd.choice(USERS), agent=rnd.choice(AGENTS),
            departments=tuple(sorted(rnd.sample(DEPARTMENTS, rnd.randint(0, 2)))),
            workspace=rnd.choice((None, *WORKSPACES)), roles=roles,
        ))
    writes = []
    for n in range(rnd.randint(4, 18)):
        kind = rnd.choice(KINDS)
        dept = rnd.choice((None, None, *DEPARTMENTS))
        content = f"memory {n} of world {seed}: " + " ".join(rnd.sample(WORDS, 3))
        writes.append(Write(rnd.randrange(len(people)), content, kind, rnd.choice(VISIBILITIES), dept))
    grants = []
    admins = [i for i, p in enumerate(people) if "admin" in p.roles]
    for _ in range(rnd.randint(0, 3) if admins else 0):
        a = rnd.choice(admins)
        t = people[a].tenant
        scope = rnd.choice([f"{t}/dept/{d}" for d in DEPARTMENTS] + [f"{t}/ws/{w}" for w in WORKSPACES] + [f"{t}/tenant"])
        grants.append(GrantSpec(a, rnd.choice(USERS), scope, rnd.random() < 0.3))
    world = World(seed, people, writes, grants)
    for _ in range(rnd.randint(3, 10)):
        reader = rnd.randrange(len(people))
        t = people[reader].tenant
        if rnd.random() < 0.75:
            exact = rnd.randrange(len(writes))
            query = writes[exact].content
        else:
            exact, query = None, " ".join(rnd.sample(WORDS, 2))
        kinds = tuple(sorted(rnd.sample(KINDS, rnd.randint(1, 3)))) if rnd.random() < 0.2 else None
        include: tuple[str, ...] = ()
        if rnd.random() < 0.3:
            pool = [g.scope for g in grants if g.scope.startswith(t + "/")] + [f"{t}/dept/{rnd.choice(DEPARTMENTS)}"]
            include = (rnd.choice(pool),)
        world.recalls.append(RecallSpec(reader, query, exact, rnd.choice(("chat", "coding")), kinds, include))
    _add_multi_agent(world, random.Random(f"{seed}/multi-agent"))
    return world


TEAMS = ("red", "red_")
TASKS = ("t1", "t1.2")
AUDIENCE = (*AGENTS, "reviewer")  # "reviewer": an agent id no person of the world runs


def _add_multi_agent(world: World, rnd: random.Random) -> None:
    """Tasks, teams, sharing fields and visible_to changes (see the module docstring)."""
    world.people = [replace(p, task=rnd.choice((None, None, *TASKS))) for p in world.people]
    for tenant in TENANTS:
        for team in TEAMS:
            if rnd.random() < 0.6:
                world.teams[(tenant, team)] = frozenset(rnd.sample(AUDIENCE, rnd.randint(1, 2)))

    def audience() -> tuple[str, ...]:
        return ("*",) if rnd.random() < 0.2 else tuple(sorted(rnd.sample(AUDIENCE, rnd.randint(1, 2))))

    for n, w in enumerate(world.writes):
        roll = rnd.random()
        if roll < 0.2:
            world.writes[n] = replace(w, visibility=None, memory_type="team", team_id=rnd.choice((None, *TEAMS)), visible_to=rnd.choice((None, ("*",))))
        elif roll < 0.5:
            world.writes[n] = replace(w, visibility=None, memory_type=rnd.choice((None, "private")), visible_to=audience())
    for _ in range(rnd.randint(0, 4)):
        world.share_changes.append(ShareChange(rnd.randrange(len(world.people)), rnd.randrange(len(world.writes)), audience()))


# -- the oracle -----------------------------------------------------------------------------
INVALID = "invalid"  # expected_write: the request must be refused as malformed (InvalidInput)


def teams_of(world: World, tenant: str, agent: str) -> set[str]:
    return {team for (t, team), agents in world.teams.items() if t == tenant and agent in agents}


def known_agents(world: World, tenant: str) -> set[str] | None:
    """Agents a tenant declared through its teams; None when it declared none (any id goes)."""
    declared = [agents for (t, _), agents in world.teams.items() if t == tenant]
    return set().union(*declared) if declared else None


def share_audience(world: World, owner_agent: str, tenant: str, visible_to: tuple[str, ...] | None) -> set[str] | str:
    """The stored extra audience of a private agent memory, or INVALID (an undeclared agent)."""
    names = set(visible_to or ()) - {owner_agent}
    known = known_agents(world, tenant)
    if known is not None and names - {"*"} - known:
        return INVALID
    return names


def expected_write(p: Person, w: Write, world: World | None = None) -> tuple[str, str] | None | str:
    """(scope, status) where `p`'s write lands, None if it must be refused (NotPermitted), or
    INVALID (InvalidInput) for sharing fields that name undeclared agents."""
    t = p.tenant
    if w.memory_type == "team" or w.team_id is not None:
        member_of = teams_of(world, t, p.agent) if world is not None else set()
        team = w.team_id if w.team_id is not None else (next(iter(member_of)) if len(member_of) == 1 else None)
        return (f"{t}/team/{team}", "active") if team is not None and team in member_of else None
    own = f"{t}/task/{p.agent}/{p.user}/{p.task}" if p.task else f"{t}/agent/{p.agent}/{p.user}"
    if w.memory_type == "private" or (w.visible_to is not None and w.visible_to != ("*",)):
        if world is not None and share_audience(world, p.agent, t, w.visible_to) == INVALID:
            return INVALID
        return own, "active"
    v = w.visibility or DEFAULT_VISIBILITY[w.kind]
    if v == "agent" and w.visibility is None and p.task:
        return own, "active"
    if v == "workspace" and p.workspace is None:
        if w.visibility is not None:
            return None
        v = "private"
    if v == "private":
        return f"{t}/user/{p.user}", "active"
    if v == "agent":
        return f"{t}/agent/{p.agent}/{p.user}", "active"
    if v == "workspace":
        return f"{t}/ws/{p.workspace}", "active"
    if v == "department":
        dept = w.department_id if w.department_id is not None else (p.departments[0] if len(p.departments) == 1 else None)
        if dept is None or dept not in p.departments:
            return None
        return f"{t}/dept/{dept}", "active" if "approver" in p.roles else "pending"
    if v == "tenant":
        return (f"{t}/tenant", "active") if "admin" in p.roles else None
    if v == "global":
        return ("global", "active") if "global_admin" in p.roles and t in GLOBAL_WRITER_TENANTS else None
    raise AssertionError(v)


def active_grants(world: World) -> set[tuple[str, str, str]]:
    """(tenant, grantee user, scope) of every grant issued and not revoked."""
    out: set[tuple[str, str, str]] = set()
    for g in world.grants:
        if not g.revoke:
            out.add((world.people[g.admin].tenant, g.grantee_user, g.scope))
    return out


def may_change_share(world: World, person: Person, scope: str) -> bool:
    """Only an agent or task memory has a selective audience; its owning agent (same tenant and
    user) or an admin of its tenant changes it."""
    parts = scope.split("/")
    if scope == "global" or parts[0] != person.tenant or parts[1] not in ("agent", "task"):
        return False
    return "admin" in person.roles or (parts[2], parts[3]) == (person.agent, person.user)


def include_allowed(world: World, reader: Person, scope: str) -> bool:
    return (reader.tenant, reader.user, scope) in active_grants(world)


def may_read(
    reader: Person, scope: str, status: str, included: tuple[str, ...] = (), *,
    world: World | None = None, audience: set[str] | frozenset[str] = frozenset(),
) -> bool:
    """May `reader` see a memory stored in `scope` with `status`, given the granted scopes it
    asked for, the world's teams and the memory's share audience (agents beyond its owner)?"""
    if status != "active":
        return False
    if scope == "global":
        return True
    parts = scope.split("/")
    if parts[0] != reader.tenant:
        return False
    if scope in included:
        return True
    kind = parts[1]
    if kind == "user":
        return parts[2] == reader.user
    if kind == "agent":
        if parts[2] == reader.agent and parts[3] == reader.user:
            return True
        return parts[3] == reader.user and (reader.agent in audience or "*" in audience)
    if kind == "task":
        if (parts[2], parts[3], parts[4]) == (reader.agent, reader.user, reader.task):
            return True
        return parts[3] == reader.user and (reader.agent in audience or "*" in audience)  # "*": the agent's other tasks too
    if kind == "team":
        return world is not None and reader.agent in world.teams.get((parts[0], parts[2]), frozenset())
    if kind == "ws":
        return parts[2] == reader.workspace
    if kind == "dept":
        return parts[2] in reader.departments
    if kind == "tenant":
        return True
    raise AssertionError(scope)


# -- expiry -----------------------------------------------------------------
# Drawn from a generator of its own (seeded from the world's seed), so the rest of a world — and
# the other oracle extensions — stay exactly what they were for every seed.
EXPIRY_SALT = 0x5EED_E0F1


@dataclass(frozen=True)
class ExpiryPlan:
    """Which writes expire (`ttl_s` per write index) and how far the bridge's clock moves
    between the writes and the recalls (`advance_s`)."""

    ttl_s: dict[int, float]
    advance_s: float

    def expired(self, write_index: int) -> bool:
        ttl = self.ttl_s.get(write_index)
        return ttl is not None and ttl <= self.advance_s


def expiry_plan(world: World) -> ExpiryPlan:
    rnd = random.Random(world.seed ^ EXPIRY_SALT)
    ttls = {i: rnd.choice((30.0, 120.0)) for i in range(len(world.writes)) if rnd.random() < 0.35}
    return ExpiryPlan(ttls, rnd.choice((0.0, 60.0, 60.0)))


def may_read_at(plan: ExpiryPlan, write_index: int, reader: Person, scope: str, status: str, included: tuple[str, ...] = (), **sharing: Any) -> bool:
    """`may_read` (with the sharing oracle's keywords), and the memory has not expired by the time of the recall."""
    return not plan.expired(write_index) and may_read(reader, scope, status, included, **sharing)
