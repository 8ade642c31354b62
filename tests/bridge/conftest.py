from __future__ import annotations

import pytest

from bridge import MemoryBridge
from tests.kit import make_identity as _make_identity


@pytest.fixture
async def bridge(tmp_path):
    b = MemoryBridge.open_local(tmp_path / "home")
    yield b
    await b.aclose()


@pytest.fixture
def make_identity():
    """Hand-built identities: these unit tests check the bridge, not the providers."""
    return _make_identity
