"""Fixtures of the admin console's browser tests: one headless Chromium per module (Debian's
package, installed with apt when missing), one fresh page per test, the shared service of
tests/conftest.py, and the screenshots of every page listed at the end of the run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.browser.browserkit import CHROMIUM, CHROMIUM_ARGS, Screenshots, ensure_chromium

_SHOTS: list[Screenshots] = []
#: Where VB_WRITE_SCREENSHOTS=1 puts the pictures of docs/admin-console.md.
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Playwright browser context over /usr/bin/chromium with a fresh user-data-dir. Module
    scope: sync Playwright runs its own event loop, which must be gone before the asyncio tests
    of later directories run (a launch costs about a second)."""
    reason = ensure_chromium(tmp_path_factory.mktemp("apt") / "apt.log")
    if reason:
        pytest.skip(f"no headless Chromium for the admin console tests: {reason}")
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, viewport={"width": 1360, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A new tab; its console errors and CSP violations are collected on `page.problems`."""
    tab = chromium.new_page()
    problems: list[str] = []
    tab.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    tab.problems = problems
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Screenshots:
    for_docs = os.environ.get("VB_WRITE_SCREENSHOTS") == "1"
    given = os.environ.get("VIKING_BRIDGE_SCREENSHOTS")
    directory = DOCS_IMAGES if for_docs else Path(given) if given else tmp_path_factory.mktemp("screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    shots = Screenshots(directory, for_docs=for_docs)
    _SHOTS.append(shots)
    return shots


def pytest_terminal_summary(terminalreporter: Any) -> None:
    taken = [p for s in _SHOTS for p in s.taken]
    if taken:
        terminalreporter.section("admin console screenshots")
        for path in taken:
            terminalreporter.write_line(str(path))
