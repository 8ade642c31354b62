"""Server-side extraction: which extracted files belong to which capture, and as what record.

OpenViking 0.5.2's session commit writes what it extracted into the committing user's own space,
`viking://user/<user>/memories/<memory type>/...` (e.g. `preferences/user/<topic>.md`), with no
bridge header, and records what it did in
`viking://user/<user>/sessions/<session>/history/archive_<n>/memory_diff.json`
(`operations.adds/updates/deletes[].uri`). The adapter surfaces an extracted file only when ALL
of these hold (else it is dropped, like any file whose scope cannot be established):

- it lies under the searched PRIVATE scope's own user root, in a directory of an extracted type
  the adapter knows (`EXTRACTED_KINDS`), and the server tagged it `memory_type=<that type>` (a
  tag ordinary writes cannot set: 0.5.2 preserves it only from extraction);
- a *capture record* the adapter wrote at capture time in that same user's space
  (`memories/vbcap/<session>.md`) names exactly the searched ScopeKey;
- the memory diff of that same session lists the file as added or updated (and a later diff of
  it did not delete it).

The hit's provenance is the capture's (author, agent, bridge session, message ids) and its
metadata names the backend session. Memory ids are `m` + 32 hex of sha256(scope, uri), so `get`
and `delete` work on extracted memories through the index.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from adapters.base import Provenance, Status, StoredMemory
from adapters.scopes import ScopeKey

__all__ = ["EXTRACTED_KINDS", "CAPTURE_DIR", "CapturedFile", "CaptureRecord", "ExtractionIndex", "encode_capture",
           "decode_capture", "extracted_id", "stored_from_extracted"]

# memory type (directory and `memory_type` tag) -> our kind
EXTRACTED_KINDS: dict[str, str] = {"preferences": "preference", "entities": "entity", "events": "event"}
CAPTURE_DIR = "vbcap"
_CAPTURE_PREFIX = "<!--viking-bridge-capture "
_SUFFIX = "-->"


def extracted_id(scope: ScopeKey, uri: str) -> str:
    return "m" + hashlib.sha256(f"extracted\x00{scope}\x00{uri}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class CaptureRecord:
    session_id: str
    scope: str
    provenance: Provenance
    captured_at: float


def encode_capture(record: CaptureRecord) -> str:
    prov = record.provenance
    body = {"v": 1, "session_id": record.session_id, "scope": record.scope, "captured_at": record.captured_at,
            "prov": prov.to_dict()}
    line = json.dumps(body, ensure_ascii=True, separators=(",", ":"), allow_nan=False).replace(_SUFFIX, "--\\u003e")
    return f"{_CAPTURE_PREFIX}{line}{_SUFFIX}\n"


def decode_capture(text: object, *, expected_session: str) -> CaptureRecord | None:
    if not isinstance(text, str) or not text.startswith(_CAPTURE_PREFIX):
        return None
    first = text.partition("\n")[0]
    if not first.endswith(_SUFFIX):
        return None
    try:
        h = json.loads(first[len(_CAPTURE_PREFIX):-len(_SUFFIX)])
        if h.get("v") != 1 or h.get("session_id") != expected_session or not isinstance(h.get("scope"), str):
            return None
        p = h["prov"]
        return CaptureRecord(
            session_id=expected_session, scope=h["scope"], captured_at=float(h["captured_at"]),
            provenance=Provenance.from_dict(p),
        )
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class CapturedFile:
    uri: str
    memory_type: str
    session_id: str
    extracted_at: float


@dataclass
class ExtractionIndex:
    """Per private scope: extracted file uri -> the capture it came from (built from diffs)."""

    scope: ScopeKey
    captures: dict[str, CaptureRecord] = field(default_factory=dict)
    files: dict[str, CapturedFile] = field(default_factory=dict)
    seen_archives: set[str] = field(default_factory=set)

    def by_id(self, memory_id: str) -> CapturedFile | None:
        for f in self.files.values():
            if extracted_id(self.scope, f.uri) == memory_id:
                return f
        return None

    def apply_diff(self, session_id: str, diff: dict[str, Any], user_root: str, extracted_at: float) -> None:
        ops = diff.get("operations") if isinstance(diff, dict) else None
        if not isinstance(ops, dict):
            return
        for name in ("adds", "updates"):
            for op in ops.get(name) or []:
                uri, mtype = (op.get("uri"), op.get("memory_type")) if isinstance(op, dict) else (None, None)
                if isinstance(uri, str) and mtype in EXTRACTED_KINDS and uri.startswith(f"{user_root}/memories/{mtype}/") \
                        and uri.endswith(".md") and ".." not in uri:
                    self.files[uri] = CapturedFile(uri, mtype, session_id, extracted_at)
        for op in ops.get("deletes") or []:
            uri = op.get("uri") if isinstance(op, dict) else None
            if isinstance(uri, str):
                self.files.pop(uri, None)


def stored_from_extracted(scope: ScopeKey, f: CapturedFile, capture: CaptureRecord, content: str) -> StoredMemory:
    return StoredMemory(
        id=extracted_id(scope, f.uri),
        scope=scope,
        content=content,
        kind=EXTRACTED_KINDS[f.memory_type],
        status=Status.ACTIVE,
        confidence=0.8,
        provenance=capture.provenance,
        subject_user_id=scope.owner_id,
        metadata={"source": "openviking_extraction", "backend_session_id": f.session_id, "memory_type": f.memory_type},
        created_at=f.extracted_at,
        updated_at=f.extracted_at,
    )
