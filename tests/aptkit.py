"""One apt-get at a time across this machine's test processes.

Tests install what a fresh machine lacks (Node for the TypeScript client, Chromium for the
admin console) with apt-get, which fails at once when another apt-get holds dpkg's lock. The
suite runs on two pytest-xdist workers, so the two installs could meet: each takes this file
lock first and looks again for what it wanted, which the other may have installed meanwhile."""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
from pathlib import Path
from typing import Iterator

LOCK = Path(tempfile.gettempdir()) / "viking-bridge-apt.lock"


@contextlib.contextmanager
def apt_lock() -> Iterator[None]:
    with open(LOCK, "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(guard, fcntl.LOCK_UN)
