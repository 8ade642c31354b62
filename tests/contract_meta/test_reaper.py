"""A test server's group dies with the process that started it (contract_tests/reaper.py).

The owner here is a real process that starts a stand-in server (`sleep`) in its own session,
as `OpenVikingServer` does, and is then SIGKILLed (no `stop()`, no `atexit`): the server must be
gone within the reaper's grace. An owner that stops the server itself releases the reaper, which
must then leave the group alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

OWNER = """\
import os, subprocess, sys, time
from contract_tests.reaper import GroupReaper
server = subprocess.Popen(["sleep", "300"], start_new_session=True)
reaper = GroupReaper(server.pid, grace_seconds=5)
if sys.argv[1] == "release":
    reaper.release()
print(server.pid, flush=True)
if sys.argv[1] == "release":
    os._exit(0)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _owner(mode: str) -> tuple[subprocess.Popen[str], int]:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, mode], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    return owner, int(owner.stdout.readline())


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_a_server_dies_with_an_owner_that_was_killed() -> None:
    owner, server = _owner("keep")
    try:
        assert _alive(server)
        owner.kill()  # SIGKILL: neither stop() nor atexit runs
        owner.wait(timeout=10)
        assert _gone_within(server, 20), "the server outlived its killed owner"
    finally:
        if _alive(server):
            os.killpg(server, signal.SIGKILL)


def test_a_released_reaper_leaves_the_group_alone() -> None:
    owner, server = _owner("release")
    try:
        owner.wait(timeout=10)
        assert not _gone_within(server, 2), "a released reaper killed the group"
    finally:
        if _alive(server):
            os.killpg(server, signal.SIGKILL)
