"""Fixtures of the contract suite: every test runs once per selected adapter.

`--adapter NAME` (repeatable) selects adapters; default: every registered one (every module in
the `viking_bridge.contract_backends` entry points, built-ins included, plus whatever a
`-p yourpackage.register` plugin registered). The options come from `contract_tests.plugin`,
which is opt-in: without it this conftest stops with a usage error saying how to load it. An
adapter that is unavailable here is skipped with its `unavailable_reason`; an adapter name that
is not registered at all is an error (a typo must not turn the whole suite into skips).

Fixtures:
    adapter_factory  the selected `AdapterFactory`
    service_world    under `--via service` only: the test's serve process and its replica
    backend          a FRESH, EMPTY backend from the factory (cleaned up afterwards); under
                     `--via service` the one the test's serve process fronts
    contract         a `ContractEnv`: that backend, a MemoryBridge over it, real identities
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import AsyncIterator

import pytest
import pytest_asyncio

from contract_tests import harness
from contract_tests.harness import ContractEnv, Identities, contract_bridge, settle_timeout_for
from contract_tests.plugin import DEFAULT_EXAMPLES
from contract_tests.registry import AdapterFactory, get_adapter, load_registered_backends, registered_adapters

PLUGIN_HINT = "the contract suite's options are not loaded: run pytest with -p contract_tests.plugin (or add pytest_plugins = [\"contract_tests.plugin\"] to your conftest.py)"


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.getoption("adapter")
    except ValueError:
        raise pytest.UsageError(PLUGIN_HINT) from None
    if config.getoption("via"):
        harness.TRANSPORT = config.getoption("via")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if harness.TRANSPORT == "service":
        from contract_tests.service_transport import startup_summary

        line = startup_summary()
        if line:
            terminalreporter.write_line(line)


def selected_adapters(config: pytest.Config) -> list[str]:
    load_registered_backends()
    chosen = list(dict.fromkeys(config.getoption("adapter") or []))
    if not chosen and not registered_adapters():
        # Parametrising with nothing would turn the whole suite into silent skips.
        raise pytest.UsageError(
            "no backend is registered for the contract suite: install viking-bridge (pip install -e .) so its"
            " viking_bridge.contract_backends entry points exist, or load a module that registers one with -p"
        )
    return chosen or sorted(registered_adapters())


def contract_examples(config: pytest.Config) -> int:
    value = config.getoption("contract_examples")
    if value is None:
        value = int(os.environ.get("VIKING_BRIDGE_CONTRACT_EXAMPLES", DEFAULT_EXAMPLES))
    return max(1, int(value))


def contract_seed(config: pytest.Config) -> int | None:
    value = config.getoption("contract_seed")
    if value is None and os.environ.get("VIKING_BRIDGE_CONTRACT_SEED"):
        value = int(os.environ["VIKING_BRIDGE_CONTRACT_SEED"])
    return value


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "adapter_name" in metafunc.fixturenames:
        names = selected_adapters(metafunc.config)
        metafunc.parametrize("adapter_name", names, ids=names)


@pytest.fixture
def adapter_factory(adapter_name: str) -> AdapterFactory:
    try:
        factory = get_adapter(adapter_name)
    except KeyError as exc:
        pytest.fail(f"{exc.args[0]}; register it with contract_tests.registry.register_adapter", pytrace=False)
    reason = factory.why_unavailable()
    if reason:
        pytest.skip(f"adapter {adapter_name!r} unavailable: {reason}")
    return factory


@pytest_asyncio.fixture
async def service_world(adapter_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[object]:
    """Under `--via service`: this test's own serve process and the test's replica of it
    (contract_tests/service_transport.py); None for every other transport."""
    if harness.TRANSPORT != "service":
        yield None
        return
    from contract_tests import service_transport

    if "monkeypatch" in request.fixturenames:
        pytest.skip("this test injects a fault or a setting into the bridge in-process (monkeypatch); a serve process cannot be patched from the test")

    if request.node.get_closest_marker("contract_own_bridge"):
        pytest.skip(harness.OWN_BRIDGE_UNDER_SERVICE)

    reason = service_transport.unavailable_reason(adapter_name)
    if reason:
        pytest.skip(f"adapter {adapter_name!r} unavailable --via service: {reason}")
    roles = request.node.get_closest_marker("contract_roles")
    async with service_transport.service_world(adapter_name, tmp_path / "service", roles_toml=roles.args[0] if roles else None) as world:
        yield world


@pytest_asyncio.fixture
async def backend(adapter_factory: AdapterFactory, service_world: object) -> AsyncIterator[object]:
    if service_world is not None:  # the backend serve fronts, as the test's replica opened it
        yield service_world.backend  # type: ignore[attr-defined]
        return
    async with adapter_factory.create() as fresh:
        yield fresh


@pytest_asyncio.fixture
async def contract(adapter_name: str, adapter_factory: AdapterFactory, backend: object, service_world: object, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[ContractEnv]:
    ids = Identities(tmp_path / "identity")
    if service_world is not None:
        env = ContractEnv(adapter=adapter_name, backend=backend, bridge=service_world.bridge, home=tmp_path, ids=ids,  # type: ignore[arg-type, attr-defined]
                          nodeid=request.node.nodeid, settle_timeout=settle_timeout_for(backend.capabilities))  # type: ignore[attr-defined]
        try:
            yield env
        finally:  # the world closes its replica (state, sessions, backend) itself
            ids.close()
        return
    bridge = contract_bridge(backend, tmp_path / "bridge")  # type: ignore[arg-type]
    env = ContractEnv(
        adapter=adapter_name,
        backend=backend,  # type: ignore[arg-type]
        bridge=bridge,
        home=tmp_path,
        ids=ids,
        nodeid=request.node.nodeid,
        settle_timeout=settle_timeout_for(backend.capabilities),  # type: ignore[attr-defined]
    )
    try:
        yield env
    finally:
        # The factory owns the backend's lifecycle; close only the bridges' own state here.
        for b in (bridge, *env.extra_bridges):
            close = getattr(b.sessions, "close", None)
            if close is not None:
                close()
            b.state.close()
        ids.close()


@pytest.fixture
def examples(request: pytest.FixtureRequest) -> int:
    return contract_examples(request.config)


@pytest.fixture
def replay_seed(request: pytest.FixtureRequest) -> int | None:
    return contract_seed(request.config)
