"""What every contract test stands on: a fresh backend, a bridge over it, real identities, polling.

- `ContractEnv` is what the `contract` fixture yields: the adapter's fresh, empty backend, a
  `MemoryBridge` over it (its own state in a temp dir), an `Identities` helper, and the settle
  timeout for backends whose writes become searchable later.
- `Identities` issues API keys with a real `ApiKeyStore` and authenticates them with the
  `ApiKeyProvider` (and signs gateway headers for tests that must choose a session id). The
  suite never builds a `MemoryIdentity` by hand: identities come from credentials, as in
  production.
- `eventually` polls a probe until a condition holds or a deadline passes — no fixed sleeps.
  Negative checks ("B does not see A's memory") first wait until a *permitted* sentinel written
  in the same batch is visible, so "absent" never just means "not indexed yet".
- `leak_message` / `fail_leak` produce failures that name the guarantee, the identity that saw
  the memory, the memory's scope and id, and how to reproduce.

This module never decides who may read what (that is the oracle's job in `oracle.py`, and the
bridge's in production).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, TypeVar

import pytest

from adapters.base import Capabilities, MemoryBackend
from adapters.scopes import ScopeKey
from bridge.facade import MemoryBridge
from bridge.policy import Policy, PolicyConfig
from bridge.results import RecallResult, RecalledMemory, WriteResult
from identity.model import MemoryIdentity
from identity.providers import ApiKey, ApiKeyProvider, ApiKeyStore, GatewayProvider, GatewayRequest, sign_gateway_headers

T = TypeVar("T")

__all__ = [
    "Clock",
    "SUITE_TENANTS",
    "ContractEnv",
    "Identities",
    "eventually",
    "fail_leak",
    "leak_message",
    "require_capability",
    "settle_timeout_for",
]


class Clock:
    """A bridge clock the test moves (`MemoryBridge(..., clock=Clock())`): expiry, grants and
    manifests judged at a chosen instant. Starts at the real time, since backends stamp
    `created_at` with theirs."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

# Every tenant id the suite writes into. The sentinel tests check these are empty.
SUITE_TENANTS = ("acme", "globex", "t0", "t1", "t2")

DEFAULT_SETTLE_SECONDS = float(os.environ.get("VIKING_BRIDGE_CONTRACT_SETTLE_S", "30"))


def settle_timeout_for(capabilities: Capabilities) -> float:
    """How long to wait for a write to become searchable: 0 (one look) unless the backend lags."""
    return DEFAULT_SETTLE_SECONDS if capabilities.search_after_write_lag else 0.0


class NotYet(AssertionError):
    """`eventually` gave up: the condition never held before the deadline."""


async def eventually(
    probe: Callable[[], Awaitable[T]],
    until: Callable[[T], bool],
    *,
    timeout: float,
    describe: str,
    first_interval: float = 0.05,
    max_interval: float = 1.0,
) -> T:
    """Call `probe` until `until(result)` holds; return that result. Deadline, not a fixed sleep.

    With `timeout=0` the probe runs exactly once (backends without write lag must be right at
    once). On timeout raises `NotYet` with `describe` and the last result.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    interval = first_interval
    while True:
        value = await probe()
        if until(value):
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NotYet(f"{describe} (gave up after {timeout:.1f}s; last result: {_short(value)})")
        await asyncio.sleep(min(interval, remaining))
        interval = min(interval * 2, max_interval)


def _short(value: object, limit: int = 600) -> str:
    if isinstance(value, RecallResult):
        text = "items=" + repr([(i.scope, i.memory_id[:12], i.content[:40]) for i in value.items])
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_identity(identity: MemoryIdentity) -> str:
    return (
        f"{identity.principal} (departments={sorted(identity.department_ids)}, workspace={identity.workspace_id}, "
        f"roles={sorted(identity.roles)}, session={identity.session_id})"
    )


def leak_message(guarantee: str, reader: MemoryIdentity | str, memory_id: str, scope: str, *, content: str | None = None, reproduce: str, detail: str = "") -> str:
    who = describe_identity(reader) if isinstance(reader, MemoryIdentity) else reader
    lines = [
        f"GUARANTEE BROKEN: {guarantee}",
        f"  identity that saw it : {who}",
        f"  memory               : id={memory_id} scope={scope}" + (f" content={content[:120]!r}" if content is not None else ""),
    ]
    if detail:
        lines.append(f"  detail               : {detail}")
    lines.append(f"  reproduce            : {reproduce}")
    return "\n".join(lines)


def fail_leak(guarantee: str, reader: MemoryIdentity | str, item: RecalledMemory | Any, *, reproduce: str, detail: str = "") -> None:
    memory_id = getattr(item, "memory_id", None) or getattr(item, "id", "?")
    scope = str(getattr(item, "scope", "?"))
    pytest.fail(leak_message(guarantee, reader, memory_id, scope, content=getattr(item, "content", None), reproduce=reproduce, detail=detail), pytrace=False)


def require_capability(backend: MemoryBackend, flag: str, *, wanted: bool = True) -> None:
    """Skip the calling test, naming the Capabilities flag, if the backend does not declare it."""
    value = getattr(backend.capabilities, flag)
    if bool(value) is not wanted:
        pytest.skip(f"{backend.name}: Capabilities.{flag} is {value!r}; this guarantee needs {flag}={wanted}")


class Identities:
    """Real credentials -> real identities. API keys by default; signed gateway headers when a
    test must present a chosen session id (the only field a request may choose)."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.store = ApiKeyStore(home / "api_keys.sqlite3")
        self.provider = ApiKeyProvider(self.store)
        self._gateway_secret = secrets.token_bytes(32)
        self.gateway = GatewayProvider(self._gateway_secret)

    def close(self) -> None:
        self.store.close()

    def issue_key(self, user: str, *, tenant: str = "acme", agent: str = "assistant", departments: Iterable[str] = (), workspace: str | None = None, roles: Iterable[str] = ()) -> str:
        return self.store.issue(tenant_id=tenant, user_id=user, agent_id=agent, department_ids=departments, workspace_id=workspace, roles=roles, label="contract-suite").key

    async def login(self, user: str, *, tenant: str = "acme", agent: str = "assistant", departments: Iterable[str] = (), workspace: str | None = None, roles: Iterable[str] = ()) -> MemoryIdentity:
        """Issue an API key bound to this identity and authenticate with it (fresh session)."""
        key = self.issue_key(user, tenant=tenant, agent=agent, departments=departments, workspace=workspace, roles=roles)
        return await self.provider.authenticate(ApiKey(key))

    async def via_gateway(self, user: str, *, session_id: str, tenant: str = "acme", agent: str = "assistant", departments: Iterable[str] = (), workspace: str | None = None, roles: Iterable[str] = (), task_id: str | None = None) -> MemoryIdentity:
        """Identity asserted by a trusted gateway in signed headers, with a client-chosen session id
        (and, for task isolation, the task the gateway says the agent works in)."""
        path = "/v1/recall"
        headers = sign_gateway_headers(
            self._gateway_secret, method="POST", path=path, tenant_id=tenant, user_id=user, agent_id=agent,
            department_ids=departments, workspace_id=workspace, roles=roles, session_id=session_id, task_id=task_id,
        )
        return await self.gateway.authenticate(GatewayRequest("POST", path, headers))


@dataclass
class ContractEnv:
    """One test's world: a fresh backend, a bridge over it, identities, and how to reproduce."""

    adapter: str
    backend: MemoryBackend
    bridge: MemoryBridge
    home: Path
    ids: Identities
    nodeid: str
    settle_timeout: float = 0.0
    extra_bridges: list[MemoryBridge] = field(default_factory=list)

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    @property
    def reproduce(self) -> str:
        test = self.nodeid.rsplit("::", 1)[-1].split("[", 1)[0]
        return f"pytest --pyargs contract_tests --adapter {self.adapter} -k {test}"

    def other_bridge(self, name: str, **kwargs: Any) -> MemoryBridge:
        """A second bridge (own state: sessions, grants, audit) over the SAME backend."""
        bridge = contract_bridge(self.backend, self.home / name, **kwargs)
        self.extra_bridges.append(bridge)
        return bridge

    async def recall(self, identity: MemoryIdentity, query: str, *, bridge: MemoryBridge | None = None, must_see: Iterable[str] = (), **kwargs: Any) -> RecallResult:
        """`bridge.recall`, polled until every id in `must_see` is visible (lagging backends).

        Also fails if the bridge's guard had to drop hits: the guard is the second wall; a backend
        that returns memories outside the ScopeSet it was given has already broken the contract.
        """
        bridge = bridge or self.bridge
        wanted = set(must_see)

        async def probe() -> RecallResult:
            result = await bridge.recall(identity, query, **kwargs)
            if result.guard_alarms:
                pytest.fail(
                    leak_message(
                        "the backend pushes the scope filter into its query: it returns only memories of the ScopeSet it is given",
                        identity, "(see audit action guard_alarm)", ",".join(result.scopes_searched),
                        reproduce=self.reproduce,
                        detail=f"the bridge's guard dropped {result.guard_alarms} hit(s) from outside the ScopeSet for query {query!r}",
                    ),
                    pytrace=False,
                )
            return result

        def seen(result: RecallResult) -> bool:
            return wanted <= {i.memory_id for i in result.items}

        return await eventually(
            probe, seen, timeout=self.settle_timeout,
            describe=f"GUARANTEE BROKEN: a recall returns the permitted memories that exist: {identity.principal} never saw its permitted memories {sorted(wanted)} for query {query!r} "
            f"(positive control; a backend that returns nothing passes no leakage test); reproduce: {self.reproduce}",
        )

    def assert_not_seen(self, result: RecallResult, forbidden: Iterable[WriteResult | str], *, guarantee: str, reader: MemoryIdentity) -> None:
        """Fail, naming the guarantee, if any forbidden memory is among the recalled items or the context."""
        ids = {f.memory_id if isinstance(f, WriteResult) else f for f in forbidden}
        for item in result.items:
            if item.memory_id in ids:
                fail_leak(guarantee, reader, item, reproduce=self.reproduce, detail=f"query={result.query!r}; searched scopes={list(result.scopes_searched)}")
        for memory_id in ids:
            if memory_id in result.context:
                pytest.fail(leak_message(guarantee, reader, memory_id, "(in rendered context)", reproduce=self.reproduce), pytrace=False)


def scope_of(result: WriteResult) -> ScopeKey:
    return ScopeKey.parse(result.scope)


# The suite's deployments let these tenants' global_admins write global memory ("acme" for the
# named tests, "t0" for the random worlds; see oracle.GLOBAL_WRITER_TENANTS).
CONTRACT_GLOBAL_WRITERS = frozenset({"acme", "t0"})


#: How the suite reaches the bridge: "library" (in-process), "http" (through the memory service,
#: contract_tests/http_transport.py), "mcp" (through the MCP server's tools, contract_tests/mcp_transport.py)
#: or "service" (a real serve process per test, contract_tests/service_transport.py; built by the fixtures). Set by `--via` (contract_tests/plugin.py) or this variable.
TRANSPORT = os.environ.get("VIKING_BRIDGE_CONTRACT_VIA", "library")


#: Why a test that builds a bridge of its own skips under `--via service`. Such a test is marked
#: `contract_own_bridge`, so the skip comes before its serve process is started (a process for
#: nothing costs seconds); `contract_bridge` skips too, for a test that lacks the marker.
OWN_BRIDGE_UNDER_SERVICE = ("this test builds a bridge of its own (its clock, options or a second state); under --via service every bridge is a"
                            " serve process configured by environment, which cannot take those from the test")


def contract_bridge(backend: MemoryBackend, home: Path, **kwargs: Any) -> MemoryBridge:
    """A bridge over `backend` with the suite's deployment policy (global writers configured),
    reached through the transport `--via` chose."""
    if TRANSPORT == "service":
        pytest.skip(OWN_BRIDGE_UNDER_SERVICE)
    kwargs.setdefault("policy", Policy(PolicyConfig(global_writer_tenants=CONTRACT_GLOBAL_WRITERS)))
    # Each test binds a fresh bridge state to a backend the suite reuses and writes to directly:
    # an explicit re-initialisation of the store binding (bridge/writes/recovery.py), on purpose.
    kwargs.setdefault("reinitialise", True)
    bridge = MemoryBridge.with_backend(backend, home, **kwargs)
    if TRANSPORT == "http":
        from contract_tests.http_transport import HttpBridge

        return HttpBridge(bridge)  # type: ignore[return-value]
    if TRANSPORT == "mcp":
        from contract_tests.mcp_transport import McpBridge

        return McpBridge(bridge)  # type: ignore[return-value]
    if TRANSPORT == "langgraph":
        from contract_tests.langgraph_transport import LangGraphBridge

        return LangGraphBridge(bridge)  # type: ignore[return-value]
    return bridge
