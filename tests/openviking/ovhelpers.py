"""Helpers shared by the OpenViking tests."""

from __future__ import annotations

import uuid

from adapters.base import NewMemory, Provenance


def mem(text: str, kind: str = "fact", **kw) -> NewMemory:
    return NewMemory(content=text, kind=kind, provenance=kw.pop("provenance", Provenance("alice", "coder")), **kw)


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"
