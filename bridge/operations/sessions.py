"""StartSession and ForkSession: the two operations that establish a session binding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from bridge.operations.base import Operation, _set
from bridge.operations.fields import (
    optional_ident,
)



@dataclass(frozen=True, slots=True, kw_only=True)
class StartSession(Operation):
    """Bind the identity's session id to it (first use wins; later use by another identity fails)."""

    continues_session: ClassVar[bool] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkSession(Operation):
    """A new session id bound to the same identity as `parent_session_id`."""

    continues_session: ClassVar[bool] = False
    parent_session_id: str | None = None

    def __post_init__(self) -> None:
        _set(self, "parent_session_id", optional_ident(self.parent_session_id, "parent_session_id"))
