"""SIGKILL a `viking-bridge migrate` process in the middle of its copy — by construction, not by
timing.

The child's stderr is a pipe of one page that the test fills beforehand but for room for the
first line (`migrate: TOTAL memories to copy`) and about ten progress lines (`migrate: N/TOTAL
(P%, R/s)`, one per 5% of the copy). Nothing reads the pipe while the child runs, so the child
blocks on a progress line by about half the copy at the latest, however fast or slow the target
is; the test polls the pipe's fill level (FIONREAD) until at least four progress lines are in it
— a fifth of the copy done — and kills the child there. Linux only (F_SETPIPE_SZ), like the
state-carry kill test.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sqlite3
import sys
import termios
import time
from collections import Counter
from pathlib import Path

from adapters.local.schema import DB_FILENAME

__all__ = ["kill_mid_copy", "local_rows"]

PAGE = 4096
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _pending(fd: int) -> int:
    """Bytes in the pipe (written, not yet read)."""
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)


def kill_mid_copy(argv: list[str], env: dict[str, str], cwd: Path, total: int, *, bound_s: float = 900) -> str:
    """Run the migration `argv` (copying `total` memories) and SIGKILL it a fifth to about half
    way through the copy; returns what it wrote on stderr. `bound_s` only bounds a child that
    blocks before a fifth (some unexpected output of its own): the kill point is not a time."""
    first = len(f"migrate: {total} memories to copy\n")
    shortest, longest = len(f"migrate: 1/{total} (0%, 0/s)\n"), len(f"migrate: {total}/{total} (100%, 99999/s)\n")
    room = first + 10 * shortest  # at most ten progress lines fit
    enough = first + 4 * longest  # this many bytes written: at least four progress lines
    assert first + 20 * shortest > room >= enough + longest, "the child could finish, or never get far enough"
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, PAGE)
    os.write(write, b"#" * (PAGE - room))  # the filler: what is left is the child's room
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=write)
    os.close(write)
    try:
        deadline = time.monotonic() + bound_s
        while _pending(read) - (PAGE - room) < enough and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    finally:
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read().decode(errors="replace").lstrip("#")
    assert child.returncode == -signal.SIGKILL, f"the run was not killed mid-copy: {said}"
    assert said.count("\n") >= 5, f"killed before a fifth of the copy: {said}"
    return said


def local_rows(home: Path) -> Counter[str]:
    """Per `SCOPE: CONTENT` (the key of tests/migrate/kit.py `records`): the rows of the local
    store's memories table under bridge home `home`, read with sqlite3, not through the adapter."""
    with contextlib.closing(sqlite3.connect(home / "store" / DB_FILENAME)) as db:
        return Counter(f"{scope}: {content}" for scope, content in db.execute("SELECT scope, content FROM memories"))
