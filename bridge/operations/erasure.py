"""ForgetSubject: erasure of everything stored about one user."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.operations.base import Operation, _set
from bridge.operations.fields import (
    ident,
)



@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetSubject(Operation):
    """Erase every memory by or about one user in the caller's tenant (GDPR erasure)."""

    subject_user_id: str

    def __post_init__(self) -> None:
        _set(self, "subject_user_id", ident(self.subject_user_id, "subject_user_id"))
