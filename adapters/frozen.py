"""Cheaper construction of the frozen, slotted dataclasses a recall builds by the dozen.

Why: a frozen dataclass's generated `__init__` sets each field with `object.__setattr__(self,
"name", value)` (its own `__setattr__` refuses), a lookup by name per field: about 0.25 us a
field, so ~4 us for a 13-field `StoredMemory`, and a recall decodes up to 50 of them and wraps
each in a `Hit`. `quick_init` gives such a class an `__init__` that sets each slot through the
slot's own descriptor instead: the same parameters in the same order, the same defaults and
default factories, the same values stored, at less than half the cost. Assignment after
construction still raises `FrozenInstanceError`; equality, hashing, `repr`, `replace` and
pickling are the dataclass's own and untouched.

What it must never do: construct anything the dataclass's own `__init__` would not. A class
whose `__init__` does more than store its fields (a `__post_init__`, an `InitVar`, a field left
out of `__init__`) is refused when the class is defined, not quietly built differently.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

__all__ = ["quick_init"]

T = TypeVar("T", bound=type)

_NO_ARGUMENT = object()  # stands for "not passed" where a field has a default factory


def quick_init(cls: T) -> T:
    """Class decorator, placed above `@dataclass(frozen=True, slots=True)`."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not params.init or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init needs a frozen, slotted dataclass with an __init__; {cls.__name__} is not")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init: {cls.__name__} has a __post_init__, which its own __init__ must run")
    every = cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
    fields = dataclasses.fields(cls)
    if len(fields) != len(every) or any(not f.init for f in fields):
        raise TypeError(f"quick_init: {cls.__name__} has an InitVar or a field outside __init__")
    scope: dict[str, object] = {"_NO_ARGUMENT": _NO_ARGUMENT}
    positional: list[str] = []
    keyword_only: list[str] = []
    body: list[str] = []
    for f in fields:
        name = f.name
        scope[f"_set_{name}"] = cls.__dict__[name].__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            scope[f"_default_{name}"] = f.default
            parameter = f"{name}=_default_{name}"
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{name}"] = f.default_factory
            parameter = f"{name}=_NO_ARGUMENT"
            body.append(f"    if {name} is _NO_ARGUMENT: {name} = _factory_{name}()")
        else:
            parameter = name
        (keyword_only if f.kw_only else positional).append(parameter)
        body.append(f"    _set_{name}(self, {name})")
    signature = ", ".join(["self", *positional, *(["*", *keyword_only] if keyword_only else [])])
    exec(f"def __init__({signature}):\n" + "\n".join(body or ["    pass"]), scope)  # noqa: S102 - built from field names only
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls
