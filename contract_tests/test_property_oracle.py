"""Property-based: random worlds vs an independent oracle (`contract_tests/oracle.py`).

Hypothesis draws world seeds; each world (tenants, departments, workspaces, users, agents,
roles, grants, writes with requested visibilities, recalls) runs against a FRESH backend from
the adapter's factory. For every write the oracle says where it lands (or that NotPermitted is
expected); for every recall:

- any returned memory the oracle forbids is a failure (seed, identity, memory named);
- a memory the oracle allows whose exact content is the query must be found (big budget);
- an include_scopes without an active grant must raise NotPermitted;
- multi-agent: teams are loaded with `apply_team_membership`, people with a task log
  in through signed gateway headers naming it, writes carry `memory_type` / `visible_to` /
  `team_id`, and `visible_to` changes are refused or applied as the oracle says.
- expiry (`oracle.expiry_plan`): some writes carry a `ttl_s`, the bridge's (fake) clock moves on
  before the recalls, and an expired memory is never returned (nor expected).

Examples per adapter: `--contract-examples N` / VIKING_BRIDGE_CONTRACT_EXAMPLES (default 25).
Replay one world: `--contract-seed SEED`.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import uuid

from bridge.errors import InvalidInput, NotPermitted
from bridge.facade import MemoryBridge
from bridge.roles.teams import apply_team_membership
from contract_tests.harness import Identities, contract_bridge, eventually, settle_timeout_for
from contract_tests.oracle import (
    INVALID, TENANTS, World, build_world, expected_write, expiry_plan, include_allowed, may_change_share, may_read, may_read_at, share_audience,
)
from contract_tests.registry import AdapterFactory

BIG = 1_000_000


class OracleViolation(AssertionError):
    pass


async def run_world(factory: AdapterFactory, adapter: str, seed: int) -> None:
    world = build_world(seed)
    reproduce = f"pytest --pyargs contract_tests --adapter {adapter} -k test_random_worlds_never_leak --contract-seed {seed}"

    def fail(guarantee: str, detail: str) -> None:
        raise OracleViolation(f"GUARANTEE BROKEN: {guarantee}\n{detail}\n  reproduce: {reproduce}\n{world.describe()}")

    home = Path(tempfile.mkdtemp(prefix="vb-contract-world-"))
    try:
        async with factory.create() as backend:
            clock = _Clock()
            bridge = contract_bridge(backend, home / "bridge", clock=clock)
            bridge.world_clock = clock  # type: ignore[attr-defined]  # _exercise moves it (expiry)
            ids = Identities(home / "identity")
            try:
                await _exercise(world, backend, bridge, ids, fail)
            finally:
                bridge.sessions.close()  # type: ignore[attr-defined]
                bridge.state.close()
                ids.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


class _Clock:
    """The bridge's clock for one world: real time until the expiry plan moves it on."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


async def _exercise(world: World, backend, bridge: MemoryBridge, ids: Identities, fail) -> None:  # type: ignore[no-untyped-def]
    expiry = expiry_plan(world)
    people = [
        await ids.login(p.user, tenant=p.tenant, agent=p.agent, departments=p.departments, workspace=p.workspace, roles=p.roles)
        if p.task is None else
        await ids.via_gateway(p.user, session_id="s" + uuid.uuid4().hex[:16], tenant=p.tenant, agent=p.agent, departments=p.departments, workspace=p.workspace, roles=p.roles, task_id=p.task)
        for p in world.people
    ]
    for tenant in TENANTS:
        await apply_team_membership(bridge, tenant, {team: agents for (t, team), agents in world.teams.items() if t == tenant})
    landed: dict[int, tuple[str, str, str]] = {}  # write index -> (memory id, scope, status)
    audience: dict[int, set[str]] = {}  # write index -> the share audience beyond the owning agent
    for i, w in enumerate(world.writes):
        person, ident = world.people[w.writer], people[w.writer]
        want = expected_write(person, w, world)
        try:
            result = await bridge.remember(
                ident, w.content, w.kind, visibility=w.visibility, department_id=w.department_id,
                memory_type=w.memory_type, visible_to=w.visible_to, team_id=w.team_id, ttl_s=expiry.ttl_s.get(i),
            )
        except NotPermitted as exc:
            if want is not None:
                fail("writes the policy must accept land where the oracle says", f"  write {i} by {person} was refused: {exc}; oracle expected {want}")
            continue
        except InvalidInput as exc:
            if want != INVALID:
                fail("sharing fields the oracle accepts are accepted", f"  write {i} by {person} was refused as invalid: {exc}; oracle expected {want}")
            continue
        if want is None or want == INVALID:
            fail("a write the identity may not make is refused (NotPermitted / InvalidInput)", f"  write {i} by {person} landed in {result.scope} ({result.status}); oracle: {want}")
        if (result.scope, result.status) != want:
            fail("a write lands in the scope the identity's policy decides", f"  write {i} by {person} landed in {result.scope} ({result.status}); oracle expected {want}")
        landed[i] = (result.memory_id, result.scope, result.status)
        if result.scope.split("/")[1:2] in (["agent"], ["task"]) and w.visible_to is not None:
            audience[i] = share_audience(world, person.agent, person.tenant, w.visible_to)  # type: ignore[assignment]
    for c in world.share_changes:
        if c.write not in landed:
            continue
        mid, scope, _ = landed[c.write]
        person, ident = world.people[c.by], people[c.by]
        allowed = may_change_share(world, person, scope)
        new = share_audience(world, scope.split("/")[2], scope.split("/")[0], c.visible_to) if allowed else set()
        try:
            await bridge.set_visible_to(ident, (scope, mid), c.visible_to)
        except NotPermitted as exc:
            if allowed:
                fail("the owner or a tenant admin may change visible_to", f"  {person} could not set {c.visible_to} on write {c.write} ({scope}): {exc}")
            continue
        except InvalidInput as exc:
            if new != INVALID:
                fail("a visible_to naming declared agents is accepted", f"  {person} setting {c.visible_to} on write {c.write}: {exc}")
            continue
        if not allowed or new == INVALID:
            fail("only the owner or a tenant admin changes visible_to (declared agents only)", f"  {person} set {c.visible_to} on write {c.write} ({scope})")
        audience[c.write] = new  # type: ignore[assignment]
    by_id = {mid: (i, scope, status) for i, (mid, scope, status) in landed.items()}

    admins = people
    for g in world.grants:
        grant = await bridge.grant(admins[g.admin], g.grantee_user, g.scope, ttl_seconds=600, reason="contract world")
        if g.revoke:
            await bridge.revoke_grant(admins[g.admin], grant.grant_id)

    timeout = settle_timeout_for(backend.capabilities)
    if timeout:  # lagging backend: wait until every active memory is visible to its author
        for i, (mid, scope, status) in landed.items():
            if status == "active":
                author = people[world.writes[i].writer]
                await eventually(lambda a=author, q=world.writes[i].content: bridge.recall(a, q, budget_tokens=BIG), lambda r, m=mid: m in {x.memory_id for x in r.items}, timeout=timeout, describe=f"write {i} never became visible to its author")

    clock = getattr(bridge, "world_clock", None)
    if clock is not None:
        clock.offset = expiry.advance_s  # the recalls happen later: some memories have expired
    for n, r in enumerate(world.recalls):
        reader, ident = world.people[r.reader], people[r.reader]
        allowed = all(include_allowed(world, reader, s) for s in r.include)
        try:
            result = await bridge.recall(ident, r.query, purpose=r.purpose, kinds=r.kinds, include_scopes=r.include, budget_tokens=BIG)
        except NotPermitted as exc:
            if allowed:
                fail("an include_scopes covered by an active grant is honoured", f"  recall {n} by {reader} include={r.include} refused: {exc}")
            continue
        if not allowed:
            fail("include_scopes without an active grant raises NotPermitted", f"  recall {n} by {reader} include={r.include} was answered")
        if result.guard_alarms:
            fail("the backend returns only memories of the ScopeSet it is given", f"  recall {n} by {reader}: the guard dropped {result.guard_alarms} foreign hit(s)")
        for item in result.items:
            known = by_id.get(item.memory_id)
            if known is None:
                fail("a recall returns only memories of this world", f"  identity {reader} saw unknown memory id={item.memory_id} scope={item.scope} {item.content!r}")
            i, scope, status = known
            if not may_read(reader, scope, status, r.include, world=world, audience=audience.get(i, set())) or item.scope != scope:
                fail(
                    "a recall returns only memories the identity may read (oracle)",
                    f"  identity that saw it: {reader}\n  memory: write {i} id={item.memory_id} scope={scope} (reported {item.scope}) status={status} {item.content!r}\n"
                    f"  recall {n}: query={r.query!r} purpose={r.purpose} kinds={r.kinds} include={r.include}",
                )
            if expiry.expired(i):
                fail("an expired memory is never returned (oracle.expiry_plan)",
                     f"  identity {reader} saw write {i} id={item.memory_id} (ttl_s={expiry.ttl_s[i]}, clock moved {expiry.advance_s}s)")
        if r.exact_of is not None and r.exact_of in landed:
            mid, scope, status = landed[r.exact_of]
            kind_ok = r.kinds is None or world.writes[r.exact_of].kind in r.kinds
            if kind_ok and may_read_at(expiry, r.exact_of, reader, scope, status, r.include, world=world, audience=audience.get(r.exact_of, set())) and mid not in {x.memory_id for x in result.items}:
                fail(
                    "a permitted memory whose exact content is the query is found",
                    f"  identity {reader} did not get write {r.exact_of} id={mid} scope={scope}; got {[(x.scope, x.memory_id[:8]) for x in result.items]}\n"
                    f"  recall {n}: purpose={r.purpose} kinds={r.kinds} include={r.include}",
                )


def test_random_worlds_never_leak(adapter_name: str, adapter_factory: AdapterFactory, examples: int, replay_seed: int | None) -> None:
    """Guarantee: in any world, a recall returns only memories the (independent) oracle says the
    identity may read, finds every permitted memory whose exact content is the query, and every
    write lands where the oracle says (or is refused when the oracle says it must be)."""
    if replay_seed is not None:
        asyncio.run(run_world(adapter_factory, adapter_name, replay_seed))
        return

    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1))
    def world(seed: int) -> None:
        asyncio.run(run_world(adapter_factory, adapter_name, seed))

    world()
