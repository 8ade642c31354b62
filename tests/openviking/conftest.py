"""Fixtures: one real OpenViking 0.5.2 server per auth mode (shared with the contract factories)."""

from __future__ import annotations

from typing import AsyncIterator

import pytest

from contract_tests.backends.openviking import _unavailable, fresh_backend, shared_server


def _server_or_skip(mode: str) -> tuple[str, str]:
    reason = _unavailable(mode)
    if reason is not None:
        pytest.skip(f"OpenViking ({mode}) unavailable: {reason}")
    return shared_server(mode)


@pytest.fixture(scope="session")
def api_key_server() -> tuple[str, str]:
    return _server_or_skip("api_key")


@pytest.fixture(scope="session")
def trusted_server() -> tuple[str, str]:
    return _server_or_skip("trusted")


@pytest.fixture(params=["api_key", "trusted"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator:
    request.getfixturevalue("api_key_server" if request.param == "api_key" else "trusted_server")
    async with fresh_backend(request.param) as b:
        yield b


@pytest.fixture
async def api_backend(api_key_server) -> AsyncIterator:
    async with fresh_backend("api_key") as b:
        yield b
