"""examples/langgraph_store.py (langmem's memory tools on the store, no LLM) must hold, run as a
real process the way a reader runs it; the README's LangGraph snippet is copied from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langmem", reason="the example needs langmem: pip install 'viking-bridge[langgraph]'")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langgraph_store.py"


def test_langmem_tools_work_on_the_store_and_cannot_reach_another_user(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), "--home", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, f"the example failed:\n{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert len(lines) == 7 and all(line.startswith("ok   ") for line in lines), done.stdout
    assert any("naming alice in the namespace is refused" in line for line in lines)


def test_readme_snippet_is_copied_from_the_example() -> None:
    source = EXAMPLE.read_text(encoding="utf-8")
    snippet = source.split("# --- snippet: Use it from LangGraph", 1)[1].split("\n", 1)[1].split("    # ----", 1)[0]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in (ln.strip() for ln in snippet.splitlines()):
        if line:
            assert line in readme, f"README's LangGraph section lacks the example's line: {line}"
