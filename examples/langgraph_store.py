"""langmem's memory tools on the bridge's LangGraph store — no LLM, the tools called directly.

    python examples/langgraph_store.py            # a throw-away home under a temp directory
    python examples/langgraph_store.py --home DIR

One `BridgeStore` for the whole deployment: each run's identity is the credential in its
`langgraph_auth_user` (what your LangGraph platform `@auth.authenticate` handler returns),
verified by the bridge's API-key provider. langmem's tools template the namespace
`("memories", "{langgraph_user_id}")` from the run's config; the store maps it to the caller's
private scope and refuses it when it names anyone else. Every step is checked; exit 0 = all held.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from langmem import create_manage_memory_tool, create_search_memory_tool

from bridge.facade import MemoryBridge
from bridge.doors.langgraph import AuthUserIdentity, BridgeStore, NamespaceRefused
from identity.providers import ApiKeyProvider, ApiKeyStore


def check(condition: bool, what: str) -> None:
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        raise SystemExit(1)


async def main(home: Path) -> None:
    # --- snippet: Use it from LangGraph -------------------------------------------------------
    bridge = MemoryBridge.open_local(home / "bridge")
    keys = ApiKeyStore(home / "keys.sqlite3")
    store = BridgeStore(bridge, AuthUserIdentity(ApiKeyProvider(keys), kind="api_key"))

    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)

    def run_as(user: str, api_key: str, named_user: str | None = None) -> dict[str, Any]:
        # what LangGraph hands a run: the authenticated user (with the credential the bridge
        # verifies) and the configurable values the namespace template reads
        return {"configurable": {"langgraph_auth_user": {"identity": user, "bridge_credential": api_key},
                                 "langgraph_user_id": named_user or user}}

    alice = run_as("alice", keys.issue(tenant_id="acme", user_id="alice", agent_id="assistant", label="example").key)
    said = await manage.ainvoke({"content": "Alice prefers answers in metric units"}, alice)
    found = json.loads(await search.ainvoke({"query": "metric units"}, alice))
    # ---------------------------------------------------------------------------------------
    check(said.startswith("created memory "), f"alice's manage_memory tool stored a memory: {said!r}")
    check([m["value"]["content"] for m in found] == ["Alice prefers answers in metric units"], "alice's search_memory tool finds it")
    memory_id = said.removeprefix("created memory ")

    updated = await manage.ainvoke({"content": "Alice prefers metric units and short answers", "action": "update", "id": memory_id}, alice)
    found = json.loads(await search.ainvoke({"query": "metric units"}, alice))
    check(updated == f"updated memory {memory_id}", "alice updates it by id")
    check([(m["key"], m["value"]["content"]) for m in found] == [(memory_id, "Alice prefers metric units and short answers")], "the update replaced it in place")

    bob_key = keys.issue(tenant_id="acme", user_id="bob", agent_id="assistant", label="example").key
    try:
        await search.ainvoke({"query": "metric units"}, run_as("bob", bob_key, named_user="alice"))
        check(False, "bob's run naming alice in the namespace is refused")
    except NamespaceRefused as exc:
        check(True, f"bob's run naming alice in the namespace is refused ({exc})")
    bob_sees = json.loads(await search.ainvoke({"query": "metric units"}, run_as("bob", bob_key)))
    check(bob_sees == [], "bob's own namespace does not hold alice's memory")

    deleted = await manage.ainvoke({"action": "delete", "id": memory_id}, alice)
    check(deleted == f"Deleted memory {memory_id}" and json.loads(await search.ainvoke({"query": "metric units"}, alice)) == [], "alice deletes it")
    await bridge.aclose()
    keys.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    if args.home is None:
        with tempfile.TemporaryDirectory(prefix="vb-langgraph-") as tmp:
            asyncio.run(main(Path(tmp)))
    else:
        asyncio.run(main(args.home))
