"""Every shell and Python block of README.md and docs/*.md runs here, so a doc cannot silently go
false again. How each block runs (and how a block is marked as one that cannot run here, with
its reason) is described in tests/docs/dockit.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs import dockit

BLOCKS = dockit.all_blocks()


def _shell_groups() -> list[list[dockit.Block]]:
    """Shell blocks to run, a `continues` block joined to its file's previous shell block."""
    groups: list[list[dockit.Block]] = []
    last: dict[Path, list[dockit.Block]] = {}
    for block in BLOCKS:
        if not block.is_shell or block.directive == "skip":
            continue
        if block.directive == "continues":
            assert block.path in last, f"{block.name}: `continues` but no shell block before it"
            last[block.path].append(block)
            continue
        group = [block]
        groups.append(group)
        last[block.path] = group
    return groups


SHELL_GROUPS = _shell_groups()
PYTHON_BLOCKS = [b for b in BLOCKS if b.lang in dockit.RUNNABLE_PYTHON and b.directive not in ("skip", "excerpt")]
SKIPPED = [b for b in BLOCKS if b.runnable and b.directive == "skip"]
EXCERPTS = [b for b in BLOCKS if b.directive == "excerpt"]


def test_every_block_declares_its_language_and_a_known_directive() -> None:
    untagged = [b.name for b in BLOCKS if not b.lang]
    assert not untagged, f"fenced blocks without a language (tag them `text` if they are not run): {untagged}"
    unknown = [(b.name, b.directive) for b in BLOCKS if b.directive and b.directive not in dockit.DIRECTIVES]
    assert not unknown, unknown
    unreasoned = [b.name for b in BLOCKS if b.directive in ("skip", "imports-only", "excerpt", "context") and not b.argument]
    assert not unreasoned, f"a skip, imports-only, excerpt or context directive needs its argument: {unreasoned}"
    misplaced = [b.name for b in BLOCKS if b.directive and not b.runnable and b.directive != "excerpt"]
    assert not misplaced, f"directives on blocks that never run: {misplaced}"


def test_the_harness_finds_the_blocks_it_must_run() -> None:
    # a parser regression that found nothing would make every test below vacuous
    assert len(SHELL_GROUPS) >= 5 and len(PYTHON_BLOCKS) >= 8, (len(SHELL_GROUPS), len(PYTHON_BLOCKS))


@pytest.mark.parametrize("group", SHELL_GROUPS, ids=lambda g: "+".join(b.name for b in g))
def test_shell_block(group: list[dockit.Block], tmp_path: Path) -> None:
    done = dockit.run_shell(group, tmp_path)
    assert done.returncode == 0, f"{group[0].name} failed (exit {done.returncode}):\n{done.stdout[-6000:]}"


@pytest.fixture(scope="module")
def python_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    programs = [(b.name, dockit.python_program(b)) for b in PYTHON_BLOCKS]
    done = dockit.run_python(programs, tmp_path_factory.mktemp("python-blocks"))
    found = dockit.results(done.stdout)
    assert found, f"the block runner reported nothing (exit {done.returncode}):\n{done.stdout[-6000:]}"
    return found


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.name)
def test_python_block(block: dockit.Block, python_results: dict[str, dict]) -> None:
    row = python_results.get(block.name)
    assert row is not None, f"{block.name} never reported (the runner died before it)"
    assert row["ok"], f"{block.name} ({block.directive or 'program'}) failed:\n{row.get('error')}\n--- as run:\n{dockit.python_program(block)}"


@pytest.mark.parametrize("block", EXCERPTS, ids=lambda b: b.name)
def test_excerpt_matches_its_source(block: dockit.Block) -> None:
    missing = dockit.excerpt_missing(block)
    assert not missing, f"{block.name} claims to be copied from {block.argument}, but these lines are not there (in order): {missing}"


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.name)
def test_block_that_cannot_run_here(block: dockit.Block) -> None:
    pytest.skip(f"{block.name}: {block.argument}")
