"""pytest plugin (registered by the distribution as `viking_bridge_contract`): the contract
suite's command-line options. Fixtures and parametrisation live in `contract_tests/conftest.py`.

    --adapter NAME            run the suite against this adapter (repeatable; default: all)
    --contract-examples N     property-based examples per adapter (env VIKING_BRIDGE_CONTRACT_EXAMPLES)
    --contract-seed SEED      replay exactly one generated world (env VIKING_BRIDGE_CONTRACT_SEED)
"""

from __future__ import annotations

import pytest

BUILT_IN_ADAPTERS = ("local", "viking", "openviking", "openviking-trusted")
DEFAULT_EXAMPLES = 25


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("viking-bridge contract suite")
    group.addoption(
        "--adapter",
        action="append",
        default=[],
        help=f"run the contract suite against these adapters (repeatable; built-ins: {', '.join(BUILT_IN_ADAPTERS)}); default: all",
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
