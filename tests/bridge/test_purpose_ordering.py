"""Seed 003's purpose orderings hold on the demo's own memories.

"Coding puts current project decisions first; chat puts the user's profile and preferences
first": measured before this change, semantic similarity swamped the purpose weights (the
demo's workspace decision ranked below other kinds, the preference below a department
standard). The recall runs over the store `viking-bridge demo` itself leaves behind.
"""

from __future__ import annotations

import io

import pytest

from adapters.base import SearchQuery
from bridge.doors.cli.demo import run_demo
from bridge.facade import MemoryBridge
from bridge.recall.context import FACTOR_NAMES
from bridge.recall.rank import lead_first, rank_hits
from bridge.vocabulary import Purpose
from tests.kit import make_identity

CODING_QUERY = "PostgreSQL database pytest flaky 测试"  # bridge/doors/cli/demo.py's own queries
CHAT_QUERY = "回答风格 database 健康检查 review"


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory):
    import asyncio

    home = tmp_path_factory.mktemp("demo")
    assert asyncio.run(run_demo(io.StringIO(), home)), "the demo's own checks failed"
    return home / "bridge"


@pytest.fixture
async def demo_bridge(demo_home):
    bridge = MemoryBridge.open_local(demo_home)
    yield bridge
    await bridge.aclose()


async def test_coding_puts_the_current_projects_decision_first(demo_bridge):
    coder = make_identity("alice", agent="coder", session="s-order-coder")
    result = await demo_bridge.recall(coder, CODING_QUERY, purpose="coding")
    first = result.items[0]
    assert (first.kind, first.scope) == ("decision", "acme/ws/alpha"), [(i.kind, i.scope) for i in result.items]
    assert "PostgreSQL 16" in first.content


async def test_chat_puts_the_users_own_preference_first(demo_bridge):
    assistant = make_identity("alice", session="s-order-chat")
    result = await demo_bridge.recall(assistant, CHAT_QUERY)
    first = result.items[0]
    assert (first.kind, first.scope) == ("preference", "acme/user/alice"), [(i.kind, i.scope) for i in result.items]


async def test_explain_keeps_the_seeds_weights_and_says_what_led(demo_bridge):
    coder = make_identity("alice", agent="coder", session="s-order-explain")
    scopes = demo_bridge.policy.readable_scopes(coder, Purpose.CODING)
    hits = (await demo_bridge.backend.search(SearchQuery(scopes, CODING_QUERY, limit=50))).hits
    by_product = rank_hits(list(hits), scopes, Purpose.CODING)
    ordered = lead_first(list(by_product), Purpose.CODING)
    lead = ordered[0]
    assert lead.hit.memory.kind == "decision" and lead.explain()["lead"] == 1.0
    assert set(FACTOR_NAMES) <= set(lead.explain())
    assert lead.explain()["scope"] == 1.0 and lead.explain()["kind"] == 1.0  # seed 003: workspace 1.00 for coding, decision 1.0
    assert by_product.index(lead) > 0, "the product alone would not have put it first (else this test proves nothing)"
    assert all("lead" not in r.explain() for r in ordered[1:] if r.hit.memory.kind not in ("decision", "fact"))
