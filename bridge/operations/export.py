"""The export operation (the right of access, and moving a tenant): what a caller may take out of the bridge.

Same rules as `bridge/operations/__init__.py`: frozen, validated when built, no field naming the caller;
whose memories an export holds is `bridge/policy/reads.py`'s (`export_scopes`, `exports`).
Import has no operation of its own: each line is an ordinary `Remember` (bridge/migrate/jsonl.py),
so the write policy decides where it may land and the provenance is the importer's.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.operations.base import Operation

__all__ = ["ExportMemories"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportMemories(Operation):
    """Every memory the identity may export, streamed scope by scope (see `bridge.policy.reads.exports`)."""
