"""A LangGraph graph compiled with `store=BridgeStore(...)`, run end to end.

The store is one per deployment (`AuthUserIdentity`): each run's identity is the credential its
`langgraph_auth_user` carries, verified by the bridge's API-key provider — as LangGraph's
platform hands the authenticated user to the graph in `config["configurable"]`. One async node
writes, one sync node (run by LangGraph in a worker thread) reads back through `store.batch`.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from adapters.scopes import ScopeKey
from bridge.errors import InvalidCredential
from bridge.facade import MemoryBridge
from bridge.doors.langgraph import AuthUserIdentity, BridgeStore, NamespaceRefused, StoreIdentityMissing
from tests.langgraph.storekit import Keys


class State(TypedDict, total=False):
    note: str
    owner: str
    recalled: list[str]


def build_graph(store: BridgeStore) -> Any:
    async def remember(state: State, *, store: BaseStore) -> State:
        await store.aput(("memories", state["owner"]), "note", {"text": state["note"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> State:  # a sync node: store.batch from a worker thread
        return {"recalled": [i.value["text"] for i in store.search(("memories", state["owner"]), query=state["note"])]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def run_config(keys: Keys, user: str, **claims: Any) -> dict[str, Any]:
    # What the platform's @auth.authenticate handler returns, as the run receives it.
    auth_user = {"identity": user, "bridge_credential": keys.issue(user, **claims)}
    return {"configurable": {"langgraph_auth_user": auth_user, "langgraph_user_id": user}}


@pytest.fixture
def graph(bridge: MemoryBridge, keys: Keys) -> Any:
    return build_graph(BridgeStore(bridge, AuthUserIdentity(keys.provider, kind="api_key")))


async def test_graph_node_writes_and_reads_through_the_store_as_the_runs_user(graph: Any, bridge: MemoryBridge, keys: Keys) -> None:
    out = await graph.ainvoke({"note": "alice prefers answers in metric units", "owner": "alice"}, run_config(keys, "alice"))
    assert out["recalled"] == ["alice prefers answers in metric units"]
    rows = await bridge.backend.list(ScopeKey.private("acme", "alice"))
    assert len(rows) == 1 and rows[0].provenance.author_user_id == "alice", "the item must be a memory in alice's private scope, written as alice"


async def test_bob_cannot_read_alice_memory_by_naming_alice_in_a_graph_run(graph: Any, keys: Keys) -> None:
    await graph.ainvoke({"note": "alice's salary band is E7", "owner": "alice"}, run_config(keys, "alice"))
    with pytest.raises(NamespaceRefused):
        await graph.ainvoke({"note": "alice's salary band is E7", "owner": "alice"}, run_config(keys, "bob"))
    # bob's own namespace in bob's run holds only what bob wrote
    out = await graph.ainvoke({"note": "bob likes tea", "owner": "bob"}, run_config(keys, "bob"))
    assert out["recalled"] == ["bob likes tea"]


async def test_a_run_without_a_verifiable_credential_is_refused(graph: Any, keys: Keys) -> None:
    with pytest.raises(StoreIdentityMissing):
        await graph.ainvoke({"note": "anonymous", "owner": "alice"}, {"configurable": {"langgraph_user_id": "alice"}})
    forged = {"configurable": {"langgraph_auth_user": {"identity": "alice", "bridge_credential": "vbk_forged_secret"}}}
    with pytest.raises(InvalidCredential):
        await graph.ainvoke({"note": "forged", "owner": "alice"}, forged)


async def test_a_jwt_in_the_auth_user_is_verified_by_the_jwt_provider(bridge: MemoryBridge) -> None:
    """The bearer kind: the platform's auth handler passes the caller's JWT through; the bridge's
    JwtProvider verifies signature, issuer and audience. A token signed by another key fails."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    from identity.providers import JwtProvider, StaticKeys, VerificationKey
    from tests.identity.idtestkit import AUDIENCE, ISSUER, SigningKey

    key = SigningKey("k1", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
    rogue = SigningKey("k1", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
    provider = JwtProvider(keys=StaticKeys([VerificationKey.from_public_key(key.public, kid="k1")]), issuer=ISSUER, audience=AUDIENCE)
    graph = build_graph(BridgeStore(bridge, AuthUserIdentity(provider)))

    def as_user(token: str) -> dict[str, Any]:
        return {"configurable": {"langgraph_auth_user": {"identity": "u17", "bridge_credential": token}}}

    out = await graph.ainvoke({"note": "u17 deploys on Fridays", "owner": "u17"}, as_user(key.mint(sub="u17", tid="acme")))
    assert out["recalled"] == ["u17 deploys on Fridays"]
    with pytest.raises(InvalidCredential):
        await graph.ainvoke({"note": "forged", "owner": "u17"}, as_user(rogue.mint(sub="u17", tid="acme")))
    with pytest.raises(NamespaceRefused):  # a valid token of u18 cannot name u17's namespace
        await graph.ainvoke({"note": "u17 deploys on Fridays", "owner": "u17"}, as_user(key.mint(sub="u18", tid="acme")))


async def test_a_thread_is_one_session_and_another_identity_cannot_continue_it(graph: Any, bridge: MemoryBridge, keys: Keys) -> None:
    """The run's thread_id is the bridge session: alice's calls on her thread share one binding,
    and bob presenting alice's thread id is refused (SessionIdentityMismatch), not served."""
    from identity.errors import SessionIdentityMismatch

    alice = run_config(keys, "alice")
    alice["configurable"]["thread_id"] = "thread-1"
    await graph.ainvoke({"note": "alice's thread note", "owner": "alice"}, alice)
    await graph.ainvoke({"note": "alice's second note", "owner": "alice"}, alice)
    bob = run_config(keys, "bob")
    bob["configurable"]["thread_id"] = "thread-1"
    with pytest.raises(SessionIdentityMismatch):
        await graph.ainvoke({"note": "bob on alice's thread", "owner": "bob"}, bob)
    events = await bridge.audit_events(await keys.login("root", roles=["admin"]), limit=1000)
    sessions = {e.session_id for e in events if e.actor.startswith("acme/alice@")}
    assert len([e for e in events if e.actor.startswith("acme/alice@")]) >= 4 and len(sessions) == 1, f"alice's runs on one thread used {len(sessions)} sessions"
