"""Which tests share one pytest-xdist worker (`--dist loadgroup`), and why.

The whole suite runs on two workers (README's test command): most of its wall time is waiting
(the OpenViking server acknowledges each write after its queue's next poll), not CPU, so two
workers overlap those waits. What must not be split is what a worker starts once per process
and reuses: every test bound to the OpenViking server of one auth mode goes to that mode's
group, so each server is started by one worker only (a start costs ~40 s of CPU and ~500 MB),
and the two modes' groups run side by side. Every other test is spread freely."""

from __future__ import annotations

import pytest

__all__ = ["group_of", "assign_groups"]


def group_of(nodeid: str) -> str | None:
    """The xdist group of a test id, None for a test any worker may take."""
    lowered = nodeid.lower()
    if "openviking" not in lowered:
        return None
    return "openviking-trusted" if "trusted" in lowered else "openviking-api_key"


def assign_groups(items: list[pytest.Item]) -> None:
    for item in items:
        group = group_of(item.nodeid)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
