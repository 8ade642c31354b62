"""pytest plugin of the contract suite: its command-line options. Fixtures and parametrisation
live in `contract_tests/conftest.py`.

Opt-in, never registered by installing the distribution (no `pytest11` entry point), so it is
not loaded into every pytest session of every project that installs viking-bridge. Load it with
`pytest -p contract_tests.plugin --pyargs contract_tests ...` or a line in your conftest.py:
`pytest_plugins = ["contract_tests.plugin"]` (this repository's root conftest.py does that).

    --adapter NAME            run the suite against this adapter (repeatable; default: all)
    --contract-examples N     property-based examples per adapter (env VIKING_BRIDGE_CONTRACT_EXAMPLES)
    --contract-seed SEED      replay exactly one generated world (env VIKING_BRIDGE_CONTRACT_SEED)
    --via library|http|mcp|langgraph|service  drive every test through the library (default), the
                              HTTP service in-process, the MCP server, (writes and recalls) the
                              LangGraph store, or a real `serve` process per test configured by
                              environment alone (contract_tests/service_transport.py)
                              (env VIKING_BRIDGE_CONTRACT_VIA)
"""

from __future__ import annotations

import pytest

DEFAULT_EXAMPLES = 25


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("viking-bridge contract suite")
    group.addoption(
        "--adapter",
        action="append",
        default=[],
        help="run the contract suite against this registered adapter (repeatable; names come from the"
        " viking_bridge.contract_backends entry points and -p plugins); default: every registered one",
    )
    group.addoption(
        "--contract-examples",
        type=int,
        default=None,
        help=f"property-based worlds per adapter (default: env VIKING_BRIDGE_CONTRACT_EXAMPLES or {DEFAULT_EXAMPLES})",
    )
    group.addoption(
        "--contract-seed",
        type=int,
        default=None,
        help="replay exactly the generated world with this seed (as printed by a failure)",
    )
    group.addoption(
        "--via",
        choices=("library", "http", "mcp", "langgraph", "service"),
        default=None,
        help="reach the bridge in-process (library, default), through the memory service's HTTP stack (http), the MCP server's tools (mcp), or the LangGraph store (langgraph: writes and recalls), or a real `viking-bridge serve` process configured by environment (service: viking, openviking, openviking-trusted; needs PostgreSQL)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "contract_roles(toml): the role file (TOML) a test's deployment starts with; under --via service it becomes serve's"
        " VIKING_BRIDGE_ROLES_FILE (the in-process transports set the same table on the bridge)")
    config.addinivalue_line(
        "markers", "contract_own_bridge: the test builds a bridge of its own (a clock, options, a second state); --via service skips it"
        " before starting a serve process")
