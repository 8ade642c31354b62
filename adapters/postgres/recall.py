"""What a recall of the PostgreSQL backend sends: its parameters and the vector channel's SQL.

One translation of a search's arguments (`search_params`) feeds every statement of it, and the
declaration of the same ScopeSet for row-level security (adapters/postgres/declare.py), so the
WHERE clauses and the policy cannot drift apart. The vector channel ranks on (scope, id,
distance) only (`vector_statement`); the full rows (`COLUMNS`) are read for the top alone.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
from psycopg import sql

from adapters.base import Status
from adapters.errors import InvalidRequest
from adapters.postgres.declare import scope_settings
from adapters.postgres.lists import joined, listed
from adapters.postgres.lexical import MAX_CANDIDATES
from adapters.postgres.locality import INDEXED_SCOPE, MAX_SCOPE_BYTES
from adapters.scopes import ScopeSet

__all__ = ["COLUMNS", "M_COLUMNS", "checked_statuses", "checked_limit", "similarity", "candidates", "search_params", "vector_statement"]

#: a stored memory's columns, in the order `PostgresBackend._decode` reads them
COLUMNS = "seq, id, scope, content, kind, status, confidence, provenance, subject_user_id, metadata, created_at, updated_at, expires_at"
#: the same, of the table aliased `m`
M_COLUMNS = ", ".join("m." + c.strip() for c in COLUMNS.split(","))


def checked_statuses(statuses: object, *, allow_none: bool) -> list[str] | None:
    """A non-empty set of Status as the sorted values the statements compare (None: any, where allowed)."""
    if statuses is None and allow_none:
        return None
    if not isinstance(statuses, (set, frozenset, list, tuple)) or not statuses or not all(isinstance(s, Status) for s in statuses):
        raise InvalidRequest("statuses must be a non-empty set of Status", backend="postgres")
    return sorted(s.value for s in statuses)


def checked_limit(limit: object, maximum: int | None = None) -> int:
    """A positive integer limit, at most `maximum`, or InvalidRequest (never a silent clamp)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1 or (maximum is not None and limit > maximum):
        raise InvalidRequest(f"limit must be an integer in [1, {maximum or 'inf'}], got {limit!r}", backend="postgres")
    return limit


def similarity(score: float) -> float:
    """An inner product of unit vectors as a similarity in [0, 1]."""
    return 0.0 if score < 0.0 else 1.0 if score > 1.0 else float(score)


def candidates(rows: Sequence[Sequence[Any]]) -> list[tuple[str, str, float]]:
    """A ranking statement's (scope, id, similarity, ...) rows as fusion candidates."""
    return [(row[0], row[1], similarity(row[2])) for row in rows]


def search_params(scopes: ScopeSet, vector: np.ndarray, *, statuses: frozenset[Status], kinds: frozenset[str] | None, now: float | None, limit: int,
                  ann_scopes: frozenset[str] = frozenset(), ann_ef_search: int = 100) -> tuple[dict[str, Any], dict[str, str], tuple[list[str], list[str], list[str]]]:
    """The parameters every search statement shares, the vector channel's planner settings and
    what the transaction declares (open scopes, restricted pairs, their ids): one translation
    of the ScopeSet for the WHERE clauses and row-level security alike."""
    allowed = checked_statuses(statuses, allow_none=False)
    open_scopes, pairs, ids = scope_settings(scopes)
    ann = [k for k in open_scopes if k in ann_scopes]
    exact = [k for k in open_scopes if k not in ann_scopes]
    params: dict[str, Any] = {
        "q": np.ascontiguousarray(vector, dtype=np.float32), "all_open": joined(open_scopes), "ids": joined(ids), "pairs": joined(pairs),
        "ann": ann, "open": joined([k for k in exact if len(k.encode()) <= MAX_SCOPE_BYTES]),
        "long": joined([k for k in exact if len(k.encode()) > MAX_SCOPE_BYTES]), "statuses": joined(allowed or []),
        "kinds": sorted(kinds) if kinds is not None else None, "limit": checked_limit(limit),
        "depth": checked_limit(limit), "now": time.time() if now is None else float(now),
        "cap": MAX_CANDIDATES + 1, "budget": MAX_CANDIDATES,
    }
    # the planner prices a bitmap scan of `memories_by_scope` below the index-only scan of the
    # covering index (it cannot see that each bitmap row costs a heap page): off for this search
    planner = {"enable_bitmapscan": "off"}
    if ann:
        planner["hnsw.ef_search"] = str(max(ann_ef_search, limit))
    return params, planner, (open_scopes, pairs, ids)


def vector_statement(params: dict[str, Any], *, rows: bool) -> str:
    """The vector channel's exact top `%(limit)s`, ranked on (id, distance) only: the sort never
    carries content, provenance or metadata of the rows that lose. One branch per way in
    (adapters/postgres/locality.py): the open scopes the covering index holds (its predicate
    repeated, so the planner may use it: an index-only scan, scope by scope), open scopes with
    keys too long for it, an entry's memory ids (primary key). Scopes with an ANN index
    (opt-in, `create_ann_index`) get a branch of their own naming the scope as a literal, so
    the planner can use that scope's partial HNSW index; every other scope stays exact.
    `rows`: the full rows of the top (columns, then the similarity); else (scope, id, similarity)."""
    filters = (" AND status = ANY(" + listed("statuses") + ") AND (expires_at IS NULL OR expires_at > %(now)s)"
               + (" AND kind = ANY(%(kinds)s)" if params["kinds"] is not None else ""))
    branch = "(SELECT id, scope, embedding <#> %(q)s AS distance, seq FROM memories WHERE {where}" + filters + " ORDER BY distance, seq LIMIT %(limit)s)"
    branches = [branch.format(where="scope = ANY(" + listed("open") + ") AND " + INDEXED_SCOPE)]
    if params["long"]:
        branches.append(branch.format(where="scope = ANY(" + listed("long") + ")"))
    if params["pairs"]:
        branches.append(branch.format(where="id = ANY(" + listed("ids") + ") AND (scope || chr(30) || id) = ANY(" + listed("pairs") + ")"))
    branches += [branch.format(where="scope = " + sql.Literal(k).as_string(None).replace("%", "%%")) for k in params["ann"]]
    ranked = "SELECT * FROM (" + " UNION ALL ".join(branches) + ") ranked ORDER BY distance, seq LIMIT %(limit)s"
    if not rows:
        return "SELECT scope, id, -distance FROM (" + ranked + ") top ORDER BY distance, seq"
    return (f"WITH top AS ({ranked}) SELECT {M_COLUMNS}, -top.distance FROM top JOIN memories m ON m.id = top.id"
            " ORDER BY top.distance, top.seq")

