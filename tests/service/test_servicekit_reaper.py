"""A service the tests start ends with the test process that started it, however that one ends.

Why: a test process that crashes (a SIGBUS in a child session was seen) runs no teardown, and
its `viking-bridge serve` (with its workers) served on, an orphan holding a port and a CPU into
the next run. `spawn_service` puts the server in its own process group watched by a reaper.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]

OWNER = """
import os, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from tests.service.servicekit import spawn_service
service = spawn_service(Path(sys.argv[1]), workers=2)
print(service.process.pid, service.url, flush=True)
os._exit(0)  # no teardown, no atexit: as a crashed test process leaves
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_service_and_its_workers_end_when_the_test_process_dies_without_stopping_them(tmp_path: Path) -> None:
    owner = subprocess.run([sys.executable, "-c", OWNER, str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert owner.returncode == 0, owner.stderr[-2000:]
    pid_text, url = owner.stdout.split()
    pid = int(pid_text)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    assert not _alive(pid), "the orphaned serve process is still running"
    try:
        httpx.get(url + "/ready", timeout=2)
    except httpx.TransportError:
        pass  # nothing listens any more: the workers are gone too
    else:
        raise AssertionError("something still serves on the orphaned service's port")
