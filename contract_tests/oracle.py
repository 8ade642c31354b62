"""Random worlds and an independent oracle for "may X read m" (and "where does X's write land").

Deliberately small and written from the rules in DESIGN.md / seed 003, NOT from `bridge.policy`
(it imports nothing from `bridge`): if the policy and the oracle disagree, one of them is wrong,
and the property test says which memory, which identity and which world.

A world is a pure function of its seed (`build_world(seed)`), so a failure's seed replays it
exactly (`--contract-seed SEED`). Ids deliberately include escaping traps and prefixes
(`ann` / `ann_` / `anna` / `a%n`, `eng` / `eng_`, unicode).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

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

    def __str__(self) -> str:
        return f"{self.tenant}/{self.user}@{self.agent} depts={list(self.departments)} ws={self.workspace} roles={list(self.roles)}"


@dataclass(frozen=True)
class Write:
    writer: int
    content: str
    kind: str
    visibility: str | None
    department_id: str | None


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

    def describe(self) -> str:
        lines = [f"world seed={self.seed}"]
        lines += [f"  person {i}: {p}" for i, p in enumerate(self.people)]
        lines += [f"  write {i}: by person {w.writer} kind={w.kind} visibility={w.visibility} dept={w.department_id} {w.content!r}" for i, w in enumerate(self.writes)]
        lines += [f"  grant: admin person {g.admin} -> user {g.grantee_user} on {g.scope}{' (then revoked)' if g.revoke else ''}" for g in self.grants]
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
    return world


# -- the oracle -----------------------------------------------------------------------------
def expected_write(p: Person, w: Write) -> tuple[str, str] | None:
    """(scope, status) where `p`'s write lands, or None if it must be refused (NotPermitted)."""
    v = w.visibility or DEFAULT_VISIBILITY[w.kind]
    t = p.tenant
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


def include_allowed(world: World, reader: Person, scope: str) -> bool:
    return (reader.tenant, reader.user, scope) in active_grants(world)


def may_read(reader: Person, scope: str, status: str, included: tuple[str, ...] = ()) -> bool:
    """May `reader` see a memory stored in `scope` with `status`, given the granted scopes it asked for?"""
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
        return parts[2] == reader.agent and parts[3] == reader.user
    if kind == "ws":
        return parts[2] == reader.workspace
    if kind == "dept":
        return parts[2] in reader.departments
    if kind == "tenant":
        return True
    raise AssertionError(scope)


# -- expiry (issue 13 item 4) -----------------------------------------------------------------
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


def may_read_at(plan: ExpiryPlan, write_index: int, reader: Person, scope: str, status: str, included: tuple[str, ...] = ()) -> bool:
    """`may_read`, and the memory has not expired by the time of the recall."""
    return not plan.expired(write_index) and may_read(reader, scope, status, included)
