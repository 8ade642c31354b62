"""Test kit for the TypeScript client: find (or install) Node, `npm ci` once per checkout, run
`npm test` and read the Node test runner's TAP summary.

`ensure_node()` returns the `npm` to use, installing Debian's nodejs/npm with apt-get when the
machine has none and we are root (CI's clean machine); it returns None only when neither is
possible, and the caller skips saying so. `npm_ci(pkg)` runs `npm ci` when the lock file changed
since the last install (a stamp in node_modules holds its SHA-256), under a file lock so two
sessions of one checkout do not install at once. `parse_tap` reads the runner's own counts.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.aptkit import apt_lock

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
_STAMP = ".viking-bridge-lock-sha256"


def ensure_node() -> tuple[str | None, str]:
    """(npm path, how it was found) — or (None, why not) when Node cannot be had here."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm and node:
        return npm, "found on PATH"
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        return None, "node/npm are not installed and cannot be installed here (no apt-get, or not root): install Node >= 20 and npm"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with apt_lock():  # the other xdist worker may be installing Chromium, or have installed Node meanwhile
        npm, node = shutil.which("npm"), shutil.which("node")
        if npm and node:
            return npm, "installed by another test process"
        for cmd in ([apt, "update"], [apt, "install", "-y", "nodejs", "npm"]):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                return None, f"node/npm are not installed and `{' '.join(cmd)}` failed: {done.stderr[-500:]}"
    npm = shutil.which("npm")
    return (npm, "installed with apt-get") if npm and shutil.which("node") else (None, "apt-get installed nodejs/npm but they are not on PATH")


def npm_ci(npm: str, package: Path = PACKAGE) -> None:
    lock = (package / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock).hexdigest()
    stamp = package / "node_modules" / _STAMP
    with open(package / ".npm-ci.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text().strip() == digest:
            return
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=package, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"npm ci failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        stamp.write_text(digest)


@dataclass(frozen=True)
class TapSummary:
    tests: int
    passed: int
    failed: int
    skipped: int
    todo: int
    cancelled: int
    failures: list[str]
    names: list[str]


def parse_tap(text: str) -> TapSummary:
    """The runner's final counts (`# pass N` ...), every `ok`/`not ok` name, and each failure's block."""
    counts = {k: int(v) for k, v in re.findall(r"^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$", text, re.M)}
    if "tests" not in counts:
        raise AssertionError(f"no TAP summary in the test runner's output:\n{text[-3000:]}")
    names = re.findall(r"^\s*(?:not )?ok \d+ - (.+?)(?: # .*)?$", text, re.M)
    failures = [m.group(0)[:3000] for m in re.finditer(r"^\s*not ok \d+ - .*?(?=^\s*(?:not )?ok \d+ - |\Z)", text, re.M | re.S)]
    return TapSummary(
        counts["tests"], counts.get("pass", 0), counts.get("fail", 0), counts.get("skipped", 0), counts.get("todo", 0), counts.get("cancelled", 0), failures, names,
    )
