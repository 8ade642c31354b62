"""The intent router and the manifest planner: deterministic, budgeted, and only ever narrowing."""

from __future__ import annotations

import time

from adapters.base import Provenance, Status, StoredMemory
from adapters.scopes import ScopeKey
from bridge.roles.model import AgentRole, Budgets, DomainRule
from bridge.roles.planner import Candidate, plan_manifest, slots_for, tier_of
from bridge.roles.router import IntentRouter, KeywordRouter, Route

RULES = {"purchasing": DomainRule(keywords=("采购", "supplier")), "code-arch": DomainRule(keywords=("kafka", "幂等", "idempoten"))}
WS = ScopeKey.workspace("acme", "procurement")
AGENT = ScopeKey.agent("acme", "coordinator", "li")
PRIVATE = ScopeKey.private("acme", "li")


def memory(mid: str, domain: str | None, tier: str | None = None, kind: str = "decision", age: float = 0.0) -> StoredMemory:
    meta = {k: v for k, v in (("domain", domain), ("tier", tier)) if v is not None}
    return StoredMemory(id=mid, scope=WS, content=mid, kind=kind, status=Status.ACTIVE, confidence=1.0, created_at=time.time() - age, updated_at=time.time() - age,
                        provenance=Provenance(author_user_id="li", author_agent_id="coordinator"), subject_user_id="li", metadata=meta)


def test_keyword_router_is_deterministic_and_chooses_only_among_the_roles_domains():
    router = KeywordRouter(RULES)
    assert isinstance(router, IntentRouter)
    route = router.route("采购订单 Kafka 消费幂等", ("purchasing", "code-arch"))
    assert route == Route("code-arch", ("purchasing",), {"purchasing": 1.0, "code-arch": 2.0})
    assert router.route("采购订单 Kafka 消费幂等", ("purchasing", "code-arch")) == route
    tie = router.route("supplier kafka", ("purchasing", "code-arch"))
    assert (tie.primary, tie.auxiliary) == ("purchasing", ("code-arch",))  # a tie goes to the role's earlier domain
    assert router.route("supplier kafka", ("purchasing",)).domains == ("purchasing",)  # never a domain the role lacks
    home = router.route("lunch menu", ("code-arch", "purchasing"))
    assert (home.primary, home.auxiliary) == ("code-arch", ())  # no match: the role's home domain, no auxiliary


def test_slots_apply_the_multiplier_and_the_auxiliary_half():
    budgets = Budgets(hot=5, warm=3, cold=2, reserve=1)
    verifier = AgentRole(domains=("purchasing",), tiers=("hot",), budget_multiplier=0.6)
    assert slots_for(budgets, verifier, auxiliary=False) == {"hot": 3, "reserve": 0}  # 5 x 0.6 is 3, not 2.9999
    ontology = AgentRole(domains=("purchasing", "code-arch"), tiers=("hot", "warm"), budget_multiplier=1.0)
    assert slots_for(budgets, ontology, auxiliary=False) == {"hot": 5, "warm": 3, "reserve": 1}
    assert slots_for(budgets, ontology, auxiliary=True) == {"hot": 2, "warm": 1, "reserve": 0}


def test_planner_fills_tiers_then_reserve_and_never_takes_what_the_role_does_not_read():
    role = AgentRole(domains=("purchasing", "code-arch"), tiers=("hot", "warm"), read_layers=("workspace",), allowed_kinds=("decision", "fact"))
    budgets = Budgets(hot=2, warm=1, cold=1, reserve=1)
    cands = [
        Candidate(WS, memory("p-hot-1", "purchasing", "hot"), 0.9),
        Candidate(WS, memory("p-hot-2", "purchasing", "hot"), 0.5),
        Candidate(WS, memory("p-hot-3", "purchasing", "hot"), 0.4),  # the reserve slot
        Candidate(WS, memory("p-hot-4", "purchasing", "hot"), 0.3),  # over budget
        Candidate(WS, memory("p-warm", "purchasing")),  # no tier metadata: warm
        Candidate(WS, memory("p-cold", "purchasing", "cold"), 1.0),  # a tier the role does not read
        Candidate(WS, memory("p-odd", "purchasing", "lukewarm"), 1.0),  # an unknown tier: never eligible
        Candidate(WS, memory("p-proc", "purchasing", "hot", kind="procedure"), 1.0),  # a kind the role does not allow
        Candidate(AGENT, memory("p-agent", "purchasing", "hot"), 1.0),  # a layer the role does not read
        Candidate(WS, memory("none", None, "hot"), 1.0),  # no domain: never routed
        Candidate(WS, memory("c-hot", "code-arch", "hot"), 0.2),
        Candidate(WS, memory("c-hot-2", "code-arch", "hot"), 0.1),  # auxiliary: hot 1 slot
        Candidate(WS, memory("f-hot", "finance", "hot"), 1.0),  # a domain the route does not name
    ]
    plan = plan_manifest(role, Route("purchasing", ("code-arch",)), cands, budgets)
    assert [mid for _, mid in plan.refs] == ["p-hot-1", "p-hot-2", "p-hot-3", "p-warm", "c-hot"]
    assert plan.counts == {"purchasing": {"hot": 3, "warm": 1}, "code-arch": {"hot": 1, "warm": 0}}
    assert plan.slots["code-arch"] == {"hot": 1, "warm": 0, "reserve": 0}
    assert tier_of(memory("x", "purchasing")) == "warm" and tier_of(memory("x", "purchasing", "lukewarm")) is None
    again = plan_manifest(role, Route("purchasing", ("code-arch",)), list(reversed(cands)), budgets)
    assert again.refs == plan.refs  # the same candidates in any order give the same manifest


def test_planner_only_chooses_among_candidates_it_was_given():
    role = AgentRole(domains=("purchasing",), read_layers=("workspace", "private"))
    cands = [Candidate(WS, memory("a", "purchasing", "hot"), 0.3), Candidate(WS, memory("a", "purchasing", "hot"), 0.8)]
    plan = plan_manifest(role, Route("purchasing"), cands, Budgets())
    assert [mid for _, mid in plan.refs] == ["a"]  # one memory found by search and listing counts once
    assert plan_manifest(role, Route("purchasing"), [], Budgets()).refs == ()
