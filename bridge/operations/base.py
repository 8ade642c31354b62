"""The base of every operation, and the one helper validators use to normalise a frozen field."""

from __future__ import annotations

from typing import ClassVar

from bridge.operations.limits import Limits



def _set(op: object, name: str, value: object) -> None:
    object.__setattr__(op, name, value)


class Operation:
    """Base of every operation; `operation_name()` names it in refusals and logs."""

    __slots__ = ()
    #: False for the two operations that establish the session binding themselves.
    continues_session: ClassVar[bool] = True
    #: True for an operation that changes or removes the memory its `ref` names (edit, forget,
    #: promote, approve, reject, share): `MemoryBridge.execute` refuses it for a memory injected
    #: into the calling agent (`Policy.check_not_injected`). tests/bridge/test_injected_read_only.py
    #: requires every operation with a `ref` to say which it is.
    changes_ref: ClassVar[bool] = False

    def check(self, limits: Limits) -> None:
        """Size limits (configuration); types and grammar were checked at construction."""

    @classmethod
    def operation_name(cls) -> str:
        """`forget_subject` for ForgetSubject: how refusals and logs name the operation."""
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("_")
