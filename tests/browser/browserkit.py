"""Test kit of the admin console's browser tests: Debian's Chromium, driven by Playwright.

`ensure_chromium()` finds /usr/bin/chromium or installs Debian's `chromium` package with apt
(as root, the way CI runs); it returns a reason to skip only when apt itself cannot be used.
Playwright's own browser downloads are never used (`playwright install` is not run): the
browser is launched from `CHROMIUM` with a fresh profile directory per session.

`Screenshots` saves one PNG per page a test visits and lists them at the end of the run. With
`VB_WRITE_SCREENSHOTS=1` they are written to docs/images/console-<name>.png under stable names,
the pictures docs/admin-console.md shows (commit them after looking at them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.aptkit import apt_lock

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "ensure_chromium", "Screenshots"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def ensure_chromium(log_path: Path) -> str | None:
    """None when /usr/bin/chromium is there (installing it if need be), else why it cannot be."""
    if os.access(CHROMIUM, os.X_OK):
        return None
    apt = shutil.which("apt-get")
    if apt is None:
        return "no /usr/bin/chromium and no apt-get to install Debian's chromium package"
    if os.geteuid() != 0:
        return "no /usr/bin/chromium, and installing Debian's chromium package with apt-get needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with apt_lock(), open(log_path, "wb") as log:  # the other xdist worker may be installing Node, or have installed Chromium
        if os.access(CHROMIUM, os.X_OK):
            return None
        for cmd in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "chromium"]):
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, timeout=1800)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed with {done.returncode}: {log_path.read_text(errors='replace')[-2000:]}")
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"apt-get installed chromium but {CHROMIUM} is missing; see {log_path}")
    return None


@dataclass
class Screenshots:
    """Where the PNGs go: docs/images (stable names) with VB_WRITE_SCREENSHOTS=1, else
    $VIKING_BRIDGE_SCREENSHOTS if set, else a pytest temporary directory (numbered names)."""

    directory: Path
    taken: list[Path] = field(default_factory=list)
    for_docs: bool = False

    def take(self, page: object, name: str, *, docs: bool = True, mask: tuple[object, ...] = ()) -> Path | None:
        """`docs=False`: a picture the run keeps but docs/admin-console.md does not show;
        `mask`: locators painted over (a one-time secret must not end up in a committed image)."""
        if self.for_docs and not docs:
            return None
        path = self.directory / (f"console-{name}.png" if self.for_docs else f"{len(self.taken) + 1:02d}-{name}.png")
        # the docs show what a screen shows (one viewport, small files); the run keeps whole pages
        page.screenshot(path=str(path), full_page=not self.for_docs, mask=list(mask))  # type: ignore[attr-defined]
        self.taken.append(path)
        return path
