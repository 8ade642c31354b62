"""Fixtures for the Viking adapter tests: a fresh simulator, a backend on it, recorded waits."""

from __future__ import annotations

from typing import AsyncIterator

import pytest

from adapters.viking import RetryPolicy, VikingBackend
from contract_tests.backends.viking import make_simulated
from contract_tests.viking_simulator import VikingSimulator
from tests.viking.vikingkit import Waits


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def retry(waits: Waits) -> RetryPolicy:
    return RetryPolicy(attempts=4, backoff_base=0.1, backoff_cap=10.0, sleep=waits, jitter=lambda ceiling: ceiling)


@pytest.fixture
def sim() -> VikingSimulator:
    return VikingSimulator(start_time=1_750_000_000.0)


@pytest.fixture
async def backend(sim: VikingSimulator, retry: RetryPolicy) -> AsyncIterator[VikingBackend]:
    _, b = make_simulated(sim, retry=retry, clock=lambda: sim.now)  # records stamped on the manual clock
    yield b
    await b.aclose()
