"""Every raise in identity/** is a member of the one error tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import identity
from identity import errors
from identity.errors import VikingBridgeError
from identity.model import MemoryIdentity

PACKAGE = Path(identity.__file__).parent
ALLOWED_BUILTINS = {"SystemExit"}  # the admin CLI's exit code, not an error


def _raised_names(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name):
                yield node.lineno, target.id


def test_identity_never_raises_a_bare_builtin_exception():
    import builtins

    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, name in _raised_names(path):
            if isinstance(getattr(builtins, name, None), type) and name not in ALLOWED_BUILTINS:
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} raises {name}")
    assert offenders == []


def test_every_identity_exception_class_is_in_the_tree():
    classes = [obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, BaseException)]
    assert classes and all(issubclass(cls, VikingBridgeError) for cls in classes)
    from identity.ids import InvalidIdError
    from identity.settings import InvalidSetting

    assert issubclass(InvalidIdError, errors.InvalidInput) and issubclass(InvalidSetting, errors.ConfigurationError)


def test_invalid_memory_identity_is_a_typed_error_that_is_still_a_value_error():
    with pytest.raises(errors.InvalidIdentityInput, match="tenant_id: .*path separator") as err:
        MemoryIdentity(tenant_id="a/b", user_id="u", agent_id="a", session_id="s")
    assert isinstance(err.value, ValueError) and isinstance(err.value, errors.InvalidInput)
    with pytest.raises(errors.InvalidIdentityInput, match="is_admin: Extra inputs are not permitted"):
        MemoryIdentity(tenant_id="t", user_id="u", agent_id="a", session_id="s", is_admin=True)
