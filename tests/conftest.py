"""One real service process per test session (two workers, so cross-worker guarantees are
exercised), on a random loopback port; stopped by its pid at the end of the session. Shared by
tests/service and tests/browser (the admin console), so a run of both starts it once (once per
pytest-xdist worker that runs either). Tests bound to one OpenViking server share a worker
(tests/xdist_groups.py)."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.service.servicekit import Service, spawn_service
from tests.xdist_groups import assign_groups


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    assign_groups(items)  # every collected test, contract_tests' included: the hook sees the session's items


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    handle = spawn_service(tmp_path_factory.mktemp("service"), workers=2)
    try:
        yield handle
    finally:
        handle.stop()
