"""The harness can fail: a failing, a skipped and a passing `node --test` file are read as such."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.nodekit import parse_tap

JS = """
import { test } from "node:test";
import assert from "node:assert/strict";
test("a passing test", () => assert.equal(1, 1));
test("a failing test", () => assert.equal(1, 2));
test("a skipped test", { skip: "no service" }, () => {});
"""


def test_a_failing_node_test_is_counted_and_named_by_the_tap_parser(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (tests/clients/test_typescript_client.py installs it when it can)")
    (tmp_path / "sample.test.mjs").write_text(JS, encoding="utf-8")
    done = subprocess.run([node, "--test", "--test-reporter=tap", str(tmp_path / "sample.test.mjs")], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    summary = parse_tap(done.stdout)
    assert (summary.tests, summary.passed, summary.failed, summary.skipped) == (3, 1, 1, 1), summary
    assert len(summary.failures) == 1 and "a failing test" in summary.failures[0]
    assert {"a passing test", "a failing test", "a skipped test"} <= set(summary.names)


def test_output_without_a_tap_summary_is_an_error_not_a_pass() -> None:
    with pytest.raises(AssertionError, match="no TAP summary"):
        parse_tap("npm ERR! build failed\n")
