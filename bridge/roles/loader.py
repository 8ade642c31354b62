"""Read a role file (TOML) into a `RoleBook`; every mistake names the file and the field.

TOML because the standard library reads it (`tomllib`) and the settings file is TOML already;
no YAML parser is a dependency. Never half-loads: a file is usable as a whole or refused.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from bridge.errors import RoleFileError
from bridge.roles.model import RoleFile
from bridge.roles.book import RoleBook

__all__ = ["load_roles", "parse_roles"]


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc if p not in ("function-after", "function-before"))


def parse_roles(data: Mapping[str, Any], path: str | Path = "<roles>") -> RoleBook:
    """Validate already-parsed TOML data (a test or an embedding application's own config)."""
    try:
        return RoleBook(RoleFile.model_validate(data), Path(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first.get("ctx", {}).get("error", first["msg"]))
        if message.startswith("@"):  # a cross-reference check: "@agents.x.field: problem"
            where, _, problem = message[1:].partition(": ")
            raise RoleFileError(str(path), where, problem) from None
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise RoleFileError(str(path), _field(tuple(first["loc"])), f"{first['msg']}{more}") from None


def load_roles(path: str | Path) -> RoleBook:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RoleFileError(str(path), "", f"cannot read it: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise RoleFileError(str(path), "", "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise RoleFileError(str(path), "", f"not valid TOML: {exc}") from None
    return parse_roles(data, path)
