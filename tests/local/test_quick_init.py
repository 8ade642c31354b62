"""`quick_init` (adapters/frozen.py): the cheaper constructor builds exactly what the dataclass's
own would, keeps the record frozen, and refuses a class it could not reproduce."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from adapters.base import Hit, Provenance, Status, StoredMemory
from adapters.frozen import quick_init
from adapters.scopes import ScopeKey


def _record_class() -> type:
    """The same frozen, slotted dataclass each call: one kept as the dataclass made it, one given quick_init."""

    @dataclass(frozen=True, slots=True)
    class Record:
        a: int
        b: str = "b"
        c: list = field(default_factory=list)
        d: float | None = field(default=None, compare=False)
        e: int = field(default=5, kw_only=True)

    return Record


_Plain = _record_class()
_Quick = quick_init(_record_class())


def _fields(obj: object) -> dict:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "args, kwargs",
    [((1,), {}), ((1, "x"), {}), ((1, "x", [3]), {"d": 0.5}), ((), {"a": 2, "e": 9}), ((1,), {"c": [], "b": "y", "e": 0})],
)
def test_the_same_fields_as_the_dataclasses_own_constructor(args: tuple, kwargs: dict) -> None:
    assert _fields(_Quick(*args, **kwargs)) == _fields(_Plain(*args, **kwargs))


def test_a_default_factory_gives_each_record_its_own_value() -> None:
    first, second = _Quick(1), _Quick(2)
    assert first.c == [] and first.c is not second.c


@pytest.mark.parametrize("args, kwargs", [((), {}), ((1, "x", [], None, 3), {}), ((1,), {"f": 1}), ((1,), {"a": 1})])
def test_the_same_argument_errors(args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError):
        _Plain(*args, **kwargs)
    with pytest.raises(TypeError):
        _Quick(*args, **kwargs)


def test_records_stay_frozen_comparable_and_picklable() -> None:
    scope = ScopeKey.parse("acme/user/alice")
    memory = StoredMemory(id="m1", scope=scope, content="tea", kind="preference", status=Status.ACTIVE, confidence=1.0,
                          provenance=Provenance("alice", "assistant"), subject_user_id="alice", metadata={}, created_at=1.0, updated_at=2.0)
    hit = Hit(memory, scope, 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.content = "coffee"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 1.0  # type: ignore[misc]
    assert memory.expires_at is None and memory.created is None  # the defaults
    assert pickle.loads(pickle.dumps(hit)) == hit
    assert dataclasses.replace(memory, content="coffee").content == "coffee"
    assert hit == Hit(memory, scope, 0.5) and hit != Hit(memory, scope, 0.25)


def test_a_class_it_cannot_reproduce_is_refused() -> None:
    with pytest.raises(TypeError, match="__post_init__"):
        @quick_init
        @dataclass(frozen=True, slots=True)
        class _Checked:
            a: int

            def __post_init__(self) -> None:
                pass

    with pytest.raises(TypeError, match="frozen, slotted"):
        @quick_init
        @dataclass(slots=True)
        class _Mutable:
            a: int

    with pytest.raises(TypeError, match="outside __init__"):
        @quick_init
        @dataclass(frozen=True, slots=True)
        class _Hidden:
            a: int
            b: int = field(default=0, init=False)
