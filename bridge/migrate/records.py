"""What a migration computes about one memory: its key on the target, and its fingerprint.

Both are pure functions of the *source* record, so a re-run (after a crash, a kill, or just
again) computes the same key for the same memory and the target's idempotent `put` returns the
copy it already holds: nothing is written twice, and no journal is needed to resume.
"""

from __future__ import annotations

import hashlib
import json
from typing import Mapping

from adapters.base import MetadataValue, NewMemory, Provenance, StoredMemory
from adapters.scopes import ScopeKey
from bridge.writes import PROMOTED_FROM

__all__ = ["migration_key", "fingerprint", "to_new_memory", "relinked", "relinked_metadata"]


def migration_key(scope: ScopeKey, source_id: str) -> str:
    """The idempotency key a migrated copy is stored under: one per (scope, source id)."""
    return "vm" + hashlib.sha256(f"migrate|{scope}|{source_id}".encode()).hexdigest()[:40]


def relinked(provenance: Provenance, id_map: Mapping[str, str]) -> Provenance:
    """`provenance` with lineage (`derived_from`) pointing at the target's ids where known; an id
    the map lacks stays as it was (a parent forgotten in the source dangles there too)."""
    if not provenance.derived_from:
        return provenance
    return Provenance(**{**_provenance_fields(provenance), "derived_from": tuple(id_map.get(i, i) for i in provenance.derived_from)})


def relinked_metadata(metadata: Mapping[str, MetadataValue], id_map: Mapping[str, str]) -> dict[str, MetadataValue]:
    """`metadata` with the bridge's promoted-from reference (`SCOPE#ID`, the memory an approval
    supersedes) pointing at the target's id where known: kept as written, an approval on the
    target would look for a source id it does not hold and leave the source active."""
    out = dict(metadata)
    ref = out.get(PROMOTED_FROM)
    if isinstance(ref, str) and "#" in ref:
        scope, _, memory_id = ref.rpartition("#")
        out[PROMOTED_FROM] = f"{scope}#{id_map.get(memory_id, memory_id)}"
    return out


def _provenance_fields(p: Provenance) -> dict[str, object]:
    return {
        "author_user_id": p.author_user_id, "author_agent_id": p.author_agent_id, "session_id": p.session_id,
        "source_message_ids": p.source_message_ids, "injected_by": p.injected_by, "derived_from": p.derived_from,
        "grant_id": p.grant_id,
    }


def to_new_memory(memory: StoredMemory, id_map: Mapping[str, str]) -> NewMemory:
    """The `put` that recreates `memory` on the target: every field but the id and `updated_at`
    (which the target stamps), the expiry included, with lineage (`derived_from`, the promoted-from
    reference) translated to the target's ids."""
    return NewMemory(
        content=memory.content, kind=memory.kind, provenance=relinked(memory.provenance, id_map), status=memory.status,
        confidence=memory.confidence, subject_user_id=memory.subject_user_id, metadata=relinked_metadata(memory.metadata, id_map),
        created_at=memory.created_at, expires_at=memory.expires_at,
    )


def fingerprint(memory: StoredMemory, lineage: Mapping[str, str] | None = None) -> str:
    """A digest of everything a migration must carry over, ids excepted. `lineage` translates
    `derived_from` and the promoted-from reference first (source ids -> target ids), so a source
    record and its copy match."""
    provenance = relinked(memory.provenance, lineage or {})
    metadata = relinked_metadata(memory.metadata, lineage or {})
    fields = {
        "scope": str(memory.scope), "content": memory.content, "kind": memory.kind, "status": memory.status.value,
        "confidence": round(memory.confidence, 6), "subject": memory.subject_user_id,
        "metadata": sorted((k, v) for k, v in metadata.items()),
        "provenance": provenance.to_dict(), "created_at": round(memory.created_at, 3),
        "expires_at": None if memory.expires_at is None else round(memory.expires_at, 3),
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
