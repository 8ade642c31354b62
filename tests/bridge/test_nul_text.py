"""Text with a NUL is refused by the bridge for every store alike: PostgreSQL cannot hold it, so
a local memory with one could never be migrated, and a query with one failed as a backend error
(503, retried forever) instead of the caller's mistake (400)."""

from __future__ import annotations

import pytest

from bridge.errors import InvalidInput
from bridge.operations import Recall, Remember
from bridge.operations.reads import EditMemory
from tests.kit import make_identity

ALICE = make_identity("alice")


@pytest.mark.parametrize("build", [
    lambda: Remember(content="a\x00b", kind="fact"),
    lambda: Remember(content="fine", kind="fact", metadata={"k": "a\x00b"}),
    lambda: Remember(content="fine", kind="fact", metadata={"k\x00": "v"}),
    lambda: Recall(query="a\x00b"),
], ids=["content", "metadata-value", "metadata-key", "query"])
def test_nul_is_invalid_input(build):
    with pytest.raises(InvalidInput, match="NUL"):
        build()


async def test_the_local_store_never_receives_one(bridge):
    with pytest.raises(InvalidInput, match="NUL"):
        await bridge.remember(ALICE, "deploy\x00 with make", "fact")
    kept = await bridge.remember(ALICE, "deploy with make", "fact")
    with pytest.raises(InvalidInput, match="NUL"):
        await bridge.execute(ALICE, EditMemory(ref=kept.ref, content="deploy\x00"))
