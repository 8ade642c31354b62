"""Input limits of every operation; each breach is an `InvalidInput` naming the limit."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    max_query_chars: int = 4000
    max_content_chars: int = 8000
    max_metadata_keys: int = 32
    max_metadata_value_chars: int = 1000
    max_messages: int = 1000
    candidate_limit: int = 50
    max_extra_scopes: int = 32  # include_scopes of one recall (each costs a grant lookup)
    max_memory_refs: int = 200  # memory_refs of one injection (each costs a backend read)
    max_audit_rows: int = 1000  # rows of one audit query
    max_active_manifests_per_user: int = 1000  # live manifests one user's agents may hold
