"""pytest plugin (registered by the distribution): the `--adapter` selector for the contract suite."""

from __future__ import annotations

import pytest

BUILT_IN_ADAPTERS = ("local", "viking", "openviking")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("viking-bridge contract suite")
    group.addoption(
        "--adapter",
        action="append",
        default=[],
        help=f"run the contract suite against these adapters (repeatable; built-ins: {', '.join(BUILT_IN_ADAPTERS)}); default: all",
    )
