"""Forget, Approve and Promote: a stored memory's life after it was written."""

from __future__ import annotations

from typing import ClassVar
from dataclasses import dataclass

from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput
from bridge.operations.base import Operation, _set
from bridge.operations.fields import (
    memory_ref, optional_ident,
    visibility,
)



@dataclass(frozen=True, slots=True, kw_only=True)
class _RefOperation(Operation):
    ref: tuple[ScopeKey, str]

    def __post_init__(self) -> None:
        _set(self, "ref", memory_ref(self.ref))


@dataclass(frozen=True, slots=True, kw_only=True)
class Forget(_RefOperation):
    """Hard-delete one memory (record, vector, manifests referencing it) and audit it."""

    changes_ref: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Approve(_RefOperation):
    """Activate a pending memory (department standard, promotion proposal)."""

    changes_ref: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Promote(Operation):
    """Widen a memory's visibility: admins directly, anyone else files a pending proposal."""

    changes_ref: ClassVar[bool] = True

    ref: tuple[ScopeKey, str]
    to: Visibility
    department_id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "ref", memory_ref(self.ref))
        to = visibility(self.to)
        if to is None:
            raise InvalidInput("promote needs a target visibility")
        _set(self, "to", to)
        _set(self, "department_id", optional_ident(self.department_id, "department_id"))
