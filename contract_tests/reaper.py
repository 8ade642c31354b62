"""A test server's process group ends with the process that started it, however that one ends.

Why: a server the tests start in its own session (so `stop()` can kill its whole group) is not
killed with its owner. `stop()` and `atexit` cover an owner that ends normally, not one that is
SIGKILLed (a parent test's timeout, an xdist worker torn down) or that leaves by `os._exit`; its
server then runs on, an orphan holding a port, memory and CPU, into the next run's benchmarks.

How: a tiny watcher process (its own session too, so a Ctrl-C of the owner's group does not take
it first) blocks reading a pipe whose only write end the owner holds. The owner's death closes
that end, the read returns nothing, and the watcher kills the group: TERM, then KILL after a
grace. An owner that stops its server itself calls `release()` first, which writes one byte: the
watcher then exits without touching the group (whose id could by then belong to another group).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
from typing import Any

__all__ = ["GroupReaper", "popen_reaped", "release_ended"]

_WATCHER = """\
import os, signal, sys, time
if sys.stdin.buffer.read(1):
    sys.exit(0)
group = int(sys.argv[1])
for sig, grace in ((signal.SIGTERM, float(sys.argv[2])), (signal.SIGKILL, 0.0)):
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        sys.exit(0)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            sys.exit(0)
        time.sleep(0.2)
"""


class GroupReaper:
    """Kills process group `group` when this process ends without calling `release()`."""

    def __init__(self, group: int, *, grace_seconds: float = 15.0) -> None:
        read_end, self._write_end = os.pipe()  # not inheritable: no other child of ours holds the write end
        try:
            self._watcher: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-c", _WATCHER, str(group), str(grace_seconds)],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)

    def release(self) -> None:
        """The owner has stopped the group itself: the watcher leaves without a signal."""
        watcher, self._watcher = self._watcher, None
        if watcher is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._write_end, b"x")
        with contextlib.suppress(OSError):
            os.close(self._write_end)
        with contextlib.suppress(subprocess.TimeoutExpired):
            watcher.wait(timeout=10)


#: the watcher of each process started by `popen_reaped` and not yet released, by pid
_REAPED: dict[int, tuple[subprocess.Popen[Any], GroupReaper]] = {}


def popen_reaped(args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen(args, **kwargs)` in its own session, whose group is ended when this
    process ends without having stopped it: what every test that starts a server uses, so a
    crashed test leaves no server behind. Stop it as any Popen (signal, wait). A watcher is
    released once its process has ended: at the next `popen_reaped` or `release_ended` call, and
    at a normal exit, so idle watchers do not pile up over a long session and none signals a
    group id that may since have been reused."""
    release_ended()
    process = subprocess.Popen(args, start_new_session=True, **kwargs)
    try:
        reaper = GroupReaper(process.pid)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        raise
    _REAPED[process.pid] = (process, reaper)
    return process


def release_ended() -> None:
    """For each process started by `popen_reaped` that has ended: end what is left of its group
    (a worker whose parent was killed) and release its watcher."""
    for pid, (process, reaper) in list(_REAPED.items()):
        if process.poll() is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            reaper.release()
            del _REAPED[pid]


atexit.register(release_ended)
