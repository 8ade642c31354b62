"""docs/architecture.md names only files and folders that exist.

The page is where a new engineer learns where things live; a module that moved while the page
still names its old place sends them looking for something that is not there. So every path the
page names is checked against the repository: paths written out in full (`bridge/assembly/backends.py`,
`bridge/doors/http/`), dotted module names (`bridge.errors.NotFound`), and the files and folders
of the tree drawing, which names them relative to the folder they are drawn under.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

TOP = ("bridge", "identity", "adapters", "contract_tests", "tests", "benchmarks", "docs", "clients", "examples")
#: a path written from the repository root: `bridge/doors/http/`, `docs/service.md`
FULL_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*)" % "|".join(TOP))
#: a dotted module name in backticks: `adapters.base.MemoryBackend`, `bridge.errors.NotFound`
DOTTED = re.compile(r"`((?:bridge|identity|adapters|contract_tests)(?:\.\w+)+)`")
#: one file or folder name as the tree drawing writes it: `facade.py`, `operations/`
NAME = re.compile(r"^(?:\w+\.py|\w+/)$")
BACKTICKED_NAME = re.compile(r"`(\w+\.py|\w+/)`")


def tree_block(text: str) -> str:
    """The code block under the "## The tree" heading."""
    section = text.split("## The tree", 1)
    assert len(section) == 2, "docs/architecture.md has no '## The tree' section"
    match = re.search(r"```(?:text)?\n(.*?)```", section[1], re.S)
    assert match, "the tree section has no code block"
    return match.group(1)


def tree_paths(block: str) -> set[str]:
    """Every file and folder the tree drawing names, as a path from the repository root.

    A line starts with one or more names (`base.py fields.py`, `http/`) at an indent that says
    which folder they are in; the text after them describes them and may name files of that
    folder in backticks. A line that starts with no name continues the description above it.
    """
    found: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, folder path) of the folders drawn so far
    context = ""  # the folder a description's backticked names belong to
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        tokens = line.split()
        names = []
        for token in tokens:
            if not NAME.match(token):
                break
            names.append(token)
        if names:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else ""
            context = parent
            for name in names:
                path = parent + name
                found.add(path)
                if name.endswith("/"):
                    stack.append((indent, path))
                    context = path
        for name in BACKTICKED_NAME.findall(line):
            found.add(context + name)
    return found


def named_paths(text: str) -> set[str]:
    """Every repository path the page names: written out in full, dotted, or in the tree."""
    paths = {m.rstrip(".") for m in FULL_PATH.findall(text) if "<" not in m}
    paths |= tree_paths(tree_block(text))
    for dotted in DOTTED.findall(text):
        if not dotted.endswith(".py"):  # `bridge.py` is a file name, not a module path
            paths.add("dotted:" + dotted)
    return paths


def exists(path: str, root: Path = ROOT) -> bool:
    if path.startswith("dotted:"):
        # a module, or a name inside one: some prefix of two parts or more is a module or package
        parts = path[len("dotted:"):].split(".")
        for end in range(len(parts), 1, -1):
            base = root.joinpath(*parts[:end])
            if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
                return True
        return False
    target = root / path
    return target.is_dir() if path.endswith("/") else target.exists()


def missing(text: str, root: Path = ROOT) -> list[str]:
    return sorted(p for p in named_paths(text) if not exists(p, root))


def test_every_path_the_architecture_page_names_exists() -> None:
    absent = missing(DOC.read_text(encoding="utf-8"))
    assert not absent, "docs/architecture.md names paths that do not exist:\n  " + "\n  ".join(absent)


def test_the_extractor_reads_the_tree_and_the_prose() -> None:
    # Not vacuous: the page's own tree and prose yield the paths a reader relies on most.
    paths = named_paths(DOC.read_text(encoding="utf-8"))
    for expected in (
        "bridge/assembly/backends.py",  # written out in the prose
        "bridge/doors/http/",  # a folder, in the prose and the tree
        "bridge/facade.py",  # a file of the tree, under bridge/
        "bridge/state/sqlite/usage.py",  # a backticked name in a tree line's description
        "bridge/operations/limits.py",  # the third of several names on one tree line
        "bridge/doors/mcp/http.py",  # the same name in two folders, resolved to each
        "bridge/doors/http/schemas.py",  # a backticked name on a continuation line
    ):
        assert expected in paths, f"the extractor missed {expected}"
    assert len(paths) > 100, f"only {len(paths)} paths extracted: the parser no longer reads the page"


def test_a_path_that_does_not_exist_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bridge" / "here").mkdir(parents=True)
    (tmp_path / "bridge" / "__init__.py").write_text("")
    (tmp_path / "bridge" / "here" / "there.py").write_text("")
    page = (
        "See `bridge/here/there.py`, `bridge/gone.py` and `bridge.here.there.Thing`, `bridge.gone.Thing`.\n"
        "## The tree\n```\nbridge/\n  here/   has `there.py` and `absent.py`\n  lost/   a folder\n```\n"
    )
    assert missing(page, tmp_path) == ["bridge/gone.py", "bridge/here/absent.py", "bridge/lost/", "dotted:bridge.gone.Thing"]
