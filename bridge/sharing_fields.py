"""Validators of the sharing fields (`visible_to`, `memory_type`) that `Remember`, `Capture` and
`SetVisibleTo` carry: grammar only (ids, `"*"`, the two writable memory types) — who may share
with whom is `bridge/sharing_policy.py`'s."""

from __future__ import annotations

from typing import Any

from bridge.errors import InvalidInput
from bridge.state.sharing import EVERY_AGENT
from bridge.validation import ident, sequence, shown

__all__ = ["visible_to_field", "memory_type_field", "MAX_AUDIENCE", "WRITABLE_MEMORY_TYPES"]

#: How many agents one `visible_to` may name (a share is for a few named agents; "*" for all).
MAX_AUDIENCE = 64
#: Values a caller may give `memory_type`; "injected" is made by `Inject`, never written.
WRITABLE_MEMORY_TYPES = ("team", "private")


def visible_to_field(value: Any) -> tuple[str, ...] | None:
    """`None`, `["*"]`, or distinct agent ids (sorted); anything else is `InvalidInput`."""
    if value is None:
        return None
    names = sequence(value, "visible_to")
    if not names:
        raise InvalidInput('visible_to, when given, names at least one agent (or "*")')
    if len(names) > MAX_AUDIENCE:
        raise InvalidInput(f"visible_to names {len(names)} agents; the limit is {MAX_AUDIENCE} (use \"*\" for every agent)")
    out = {EVERY_AGENT if n == EVERY_AGENT else ident(n, "visible_to agent id") for n in names}
    if EVERY_AGENT in out and len(out) > 1:
        raise InvalidInput('visible_to is either ["*"] or a list of agent ids, not both')
    return tuple(sorted(out))


def memory_type_field(value: Any) -> str | None:
    if value is None:
        return None
    if value == "injected":
        raise InvalidInput('memory_type "injected" is made by inject (a parent agent\'s manifest), never written directly')
    if value not in WRITABLE_MEMORY_TYPES:
        raise InvalidInput(f"unknown memory_type {shown(value)}; expected team or private")
    return str(value)
