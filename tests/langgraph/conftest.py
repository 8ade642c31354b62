"""Fixtures of the LangGraph store tests: a fresh bridge over the local store, and identities
from real API keys (the store's identity comes from a credential, as in production)."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio

pytest.importorskip("langgraph", reason="the LangGraph store needs the langgraph extra: pip install 'viking-bridge[langgraph]'")

from bridge.facade import MemoryBridge  # noqa: E402
from bridge.doors.langgraph import BridgeStore  # noqa: E402
from tests.langgraph.storekit import Keys  # noqa: E402


@pytest.fixture
def keys(tmp_path: Path) -> "Keys":
    k = Keys(tmp_path / "keys")
    yield k
    k.close()


@pytest_asyncio.fixture
async def bridge(tmp_path: Path) -> AsyncIterator[MemoryBridge]:
    b = MemoryBridge.open_local(tmp_path / "bridge")
    yield b
    await b.aclose()


@pytest_asyncio.fixture
async def store(bridge: MemoryBridge, keys: "Keys") -> BridgeStore:
    """A store bound to alice (eng, workspace alpha) over an EMPTY bridge."""
    return BridgeStore(bridge, await keys.login("alice", departments=["eng"], workspace="alpha"))
