"""Helpers shared by the Viking tests (imported by name; pytest puts this directory on sys.path)."""

from __future__ import annotations

from typing import Awaitable, Callable, TypeVar

from adapters.base import NewMemory, Provenance
from contract_tests.viking_simulator import VikingSimulator

T = TypeVar("T")


class Waits:
    """An injectable `sleep` that records what it was asked to wait and never waits."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def prov(user: str = "u1", agent: str = "coder") -> Provenance:
    return Provenance(author_user_id=user, author_agent_id=agent)


def mem(content: str, kind: str = "fact", **kw: object) -> NewMemory:
    provenance = kw.pop("provenance", None) or prov()
    return NewMemory(content=content, kind=kind, provenance=provenance, **kw)  # type: ignore[arg-type]


async def eventually(sim: VikingSimulator, probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool], *, step: float = 1.0, max_steps: int = 120) -> T:
    """Poll `probe` until `ok`, advancing the simulator's manual clock between polls (no sleeping)."""
    for _ in range(max_steps):
        value = await probe()
        if ok(value):
            return value
        sim.advance(step)
    raise AssertionError(f"condition not met after {max_steps} polls ({max_steps * step}s simulated)")
