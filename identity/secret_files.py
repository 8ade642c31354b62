"""Secrets read from files: `<SETTING>_FILE=/run/secrets/...` for every secret setting.

Why one module, here: container platforms mount secrets as files, and an operator expects the
same `_FILE` rule for every secret, whichever layer's settings hold it (the identity settings'
gateway secret, the bridge's backend credentials, the service's purge keys). It lives in
`identity` because that is the lowest layer: the bridge's settings may import it, while identity
may import nothing of the bridge (pyproject.toml [tool.importlinter]).

The rule: a field typed `SecretStr` (or a tuple of them) is a secret. For such a field `name`,
the raw input may carry `name_file` instead (from the environment `<PREFIX><NAME>_FILE`, from a
nested model's `..._FILE`, or from a TOML table as `name_file`); the file's text, stripped of
surrounding whitespace, becomes the value before validation. Refused, with an error that names
the setting and the path but never the content:
- a value and a file both given for one secret (the operator must see which credential the
  process runs with; neither silently wins), unless both say the same (an empty value counts as
  not given: it is what a host writes for an unset `${VARIABLE}`);
- a file that cannot be read, is not UTF-8, or is empty.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from identity.errors import ConfigurationError

__all__ = ["FILE_SUFFIX", "SecretFilesFromEnvironment", "read_secret_file", "resolve_secret_files", "secret_fields"]

FILE_SUFFIX = "_file"


def secret_fields(model: type[BaseModel]) -> list[str]:
    """The fields of `model` that hold a secret (typed `SecretStr`, optional or a tuple of them)."""
    return [name for name, f in model.model_fields.items() if SecretStr in (getattr(f.annotation, "__args__", None) or (f.annotation,))]


def read_secret_file(setting: str, path: Any) -> str:
    """The secret in the file `path` names. Errors name the setting and the path, never the content."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigurationError(f"{setting}={path}: cannot read the secret file ({reason})") from None
    if not text:
        raise ConfigurationError(f"{setting}={path}: the secret file is empty")
    return text


def _plain(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, (tuple, list)):
        return ",".join(str(_plain(v)) for v in value)
    return value


def resolve_secret_files(model: type[BaseModel], data: Any, prefix: str) -> Any:
    """Replace every `<secret>_file` key of the raw input `data` by the secret its file holds.

    Called from a `model_validator(mode="before")` of each settings model, so a secret added to a
    model later is readable from a file with no further code. `prefix` is the environment prefix
    of the model (`VIKING_BRIDGE_GATEWAY__`), used only to name the setting in errors."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for name in secret_fields(model):
        path = data.pop(name + FILE_SUFFIX, None)
        if path is None or path == "":
            continue
        setting = f"{prefix}{name}{FILE_SUFFIX}".upper()
        secret = read_secret_file(setting, path)
        given = data.get(name)
        if given == "":  # what a host writes for an unset ${VARIABLE}: nothing given
            given = None
        # settings rebuilt from settings already read carry the same secret: agreed, not a conflict
        if given is not None and _plain(given) != secret:
            raise ConfigurationError(f"{setting} and {prefix}{name}".upper() + " are both set: set one of them")
        data[name] = secret
    return data


class SecretFilesFromEnvironment(PydanticBaseSettingsSource):
    """`<PREFIX><SECRET>_FILE` for a settings class's top-level secrets (a nested model's reach
    it through the ordinary environment source, `<PREFIX><MODEL>__<SECRET>_FILE`, and its own
    `resolve_secret_files` validator). Placed after the environment source in
    `settings_customise_sources`."""

    def __init__(self, settings_cls: type[BaseSettings], prefix: str) -> None:
        super().__init__(settings_cls)
        self._prefix = prefix

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover - unused
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in secret_fields(self.settings_cls):
            variable = f"{self._prefix}{name}{FILE_SUFFIX}".upper()
            if os.environ.get(variable):
                found[name + FILE_SUFFIX] = os.environ[variable]
        return found
