"""What a transaction declares for row-level security: the ScopeSet as `SET LOCAL` settings.

The memory store's policy (adapters/postgres/schema.py) shows a transaction only the rows of the
scopes, and the (scope, id) pairs, it declared here; the vector and lexical queries put the same
values in their WHERE clauses, so both walls are built from one translation of the ScopeSet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from adapters.postgres.lists import joined
from adapters.postgres.schema import IDS_SETTING, MEMORIES_SETTING, PAIR, SCOPES_SETTING, SEP
from adapters.scopes import ScopeSet

__all__ = ["scope_settings", "declare", "declaration"]

if TYPE_CHECKING:
    from psycopg import AsyncConnection as Conn


def scope_settings(scopes: ScopeSet) -> tuple[list[str], list[str], list[str]]:
    """(open scopes, restricted pairs, restricted ids) — what a transaction declares for RLS and
    the WHERE clause uses alike. Ids that could break the setting's framing are dropped."""
    open_scopes: list[str] = []
    pairs: list[str] = []
    ids: list[str] = []
    for entry in scopes:
        key = str(entry.key)
        if entry.memory_ids is None:
            open_scopes.append(key)
            continue
        for mid in sorted(entry.memory_ids):
            if isinstance(mid, str) and mid and not any(c in mid for c in (SEP, PAIR, "\x00")):
                pairs.append(key + PAIR + mid)
                ids.append(mid)
    return open_scopes, pairs, ids


def declaration(open_scopes: Sequence[str], pairs: Sequence[str] = (), ids: Sequence[str] = (),
                planner: Mapping[str, str] | None = None) -> tuple[str, tuple[str, ...]]:
    """The statement that SETs LOCAL the permitted scopes for the rest of its transaction (the
    RLS policy reads them), and any `planner` settings for that transaction alike (one statement
    instead of one `SET LOCAL` each: a round trip less per setting)."""
    settings = [(SCOPES_SETTING, joined(open_scopes)), (MEMORIES_SETTING, joined(pairs)), (IDS_SETTING, joined(ids)),
                *(planner or {}).items()]
    return "SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(settings)), tuple(v for pair in settings for v in pair)


async def declare(conn: "Conn", open_scopes: Sequence[str], pairs: Sequence[str] = (), ids: Sequence[str] = ()) -> None:
    """Execute `declaration` in the caller's transaction."""
    await conn.execute(*declaration(open_scopes, pairs, ids))  # type: ignore[arg-type]
