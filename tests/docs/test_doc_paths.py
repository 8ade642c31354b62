"""Every repository path README.md and docs/*.md name in backticks (or link to) exists: a doc
naming a file that is not in the repository (a design note, a conftest that moved) goes false
silently otherwise."""

from __future__ import annotations

import re

from tests.docs.dockit import ROOT, documents

_TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} - {"node_modules"}
_CANDIDATE = re.compile(r"`([^`\s]+)`|\]\(([^)\s#]+)")
_FILE = re.compile(r"^[\w.\-/]+(\.(py|md|json|toml|ts|mjs|jsonl|sh)|/)$")


def named_paths(text: str) -> set[str]:
    found = set()
    for m in _CANDIDATE.finditer(text):
        token = (m.group(1) or m.group(2) or "").split(":")[0].split("::")[0]
        if "://" in token or "*" in token or "<" in token or not _FILE.match(token):
            continue
        if token.split("/")[0] in _TOP and ("/" in token or (ROOT / token).suffix):
            found.add(token)
    return found


def test_the_extractor_finds_paths() -> None:
    assert {"docs/openapi.json", "bridge/errors.py"} <= named_paths("`docs/openapi.json` and [x](bridge/errors.py)")
    assert named_paths("`DESIGN.md`") == set()  # not under a top-level folder of the repo: ignored, see below


def test_every_path_the_docs_name_exists() -> None:
    missing = []
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        for path in sorted(named_paths(text)):
            base = ROOT if not path.startswith(("../", "./")) else doc.parent
            if not (base / path).exists() and not (doc.parent / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, "docs name paths that are not in the repository:\n  " + "\n  ".join(missing)


def test_no_doc_names_a_file_kept_outside_the_repository() -> None:
    # the design notes and research live outside this repository; a doc that points there
    # sends the reader to a file they do not have
    outside = re.compile(r"DESIGN\.md|research/prior-art\.md|research/[\w-]+\.md")
    found = [f"{d.relative_to(ROOT)}: {m.group(0)}" for d in documents() for m in outside.finditer(d.read_text(encoding="utf-8"))]
    assert not found, found
