"""The README's MCP host configs are the files the end-to-end tests start (examples/mcp/)."""

from __future__ import annotations

from tests.mcp.mcpkit import EXAMPLES, ROOT


def test_readme_mcp_snippets_are_the_tested_example_files() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("stdio.mcp.json", "http.mcp.json"):
        snippet = (EXAMPLES / name).read_text(encoding="utf-8").rstrip("\n")
        assert f"```json\n{snippet}\n```" in readme, f"README's 'Use it from MCP' no longer shows examples/mcp/{name}"
