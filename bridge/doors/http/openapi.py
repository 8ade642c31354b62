"""The committed OpenAPI 3.1 spec: `python -m bridge.doors.http.openapi [--write | --check]`.

The spec is generated from the request/response models (`bridge.doors.http.app.application()`),
written to docs/openapi.json with `--write`; `--check` (and tests/service/test_openapi_drift.py)
fails when the code's spec differs from the committed file.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["spec", "render", "DEFAULT_PATH"]

DEFAULT_PATH = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"


def spec() -> dict[str, Any]:
    from bridge.doors.http.app import application

    return copy.deepcopy(application().openapi())


def render() -> str:
    return json.dumps(spec(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bridge.doors.http.openapi", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the spec to docs/openapi.json")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/openapi.json differs from the code")
    parser.add_argument("--path", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        args.path.write_text(text, encoding="utf-8")
        print(f"wrote {args.path}")
        return 0
    if args.check:
        same = args.path.exists() and args.path.read_text(encoding="utf-8") == text
        if not same:
            print(f"{args.path} is out of date: run python -m bridge.doors.http.openapi --write", file=sys.stderr)
        return 0 if same else 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
