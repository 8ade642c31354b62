"""One real `viking-bridge mcp --transport http` process per test session, stopped by its pid."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.mcp.mcpkit import spawn_mcp_http
from tests.service.servicekit import Service


@pytest.fixture(scope="session")
def mcp_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    handle = spawn_mcp_http(tmp_path_factory.mktemp("mcp-http"))
    try:
        yield handle
    finally:
        handle.stop()
