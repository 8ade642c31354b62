"""Export to and import from JSON Lines (the format is in docs/migration.md).

    {"format": "viking-bridge-export", "version": 1, "tenant_id": ..., "exported_by": ..., "exported_at": ...}
    {"type": "memory", "memory_id": ..., "scope": ..., "kind": ..., "status": ..., "content": ..., ...}
    ...
    {"type": "end", "count": N, "hmac_sha256": "<keyed digest of the memory lines, each with its newline>"}

An export holds what the caller may export (`bridge.policy.reads.export_scopes`/`exports`: a tenant
admin their tenant, anyone else their own memories) and is audited. The end line makes a
truncated or edited file detectable: `read_export` refuses one before anything is imported. The
seal is an HMAC keyed with the deployment's export key (`export_key`), not a bare digest anyone
could recompute over a forged file; an import checks it with the same key.

An import is a series of ordinary writes *as the importer*: each line is a `Remember` into the
line's scope if the write policy puts it there for this identity (otherwise the line is refused,
nothing written for it); the provenance is the importer's — a file cannot make anyone the
author of anything — and the source id and creation time are kept as metadata
(`imported_from`, `imported_created_at`); the expiry is kept as it was, and a memory that
has expired by the time of the import is gone (counted as `expired`, not re-created). Re-importing a file writes nothing new (each line's
idempotency key is derived from its source id and scope).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, TextIO

from adapters.base import StoredMemory
from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput, NotPermitted
from bridge.operations.export import ExportMemories
from bridge.operations.fields import RESERVED_METADATA_PREFIX
from identity.model import MemoryIdentity

__all__ = ["FORMAT", "VERSION", "ExportSummary", "ImportReport", "export_jsonl", "read_export", "import_jsonl", "export_key"]

#: Version 2: the end line's seal is keyed (`hmac_sha256`); a version-1 file (an unkeyed digest,
#: which anyone who edits the file can recompute) is refused.
FORMAT, VERSION = "viking-bridge-export", 2
SEAL_KEY_FILE = "export-seal.key"
MIN_KEY_BYTES = 32


def export_key(home: Path, configured: str | None = None) -> bytes:
    """The seal key: `configured` (VIKING_BRIDGE_EXPORT_KEY) or HOME/export-seal.key, created
    (0600) on first use."""
    if configured is not None:
        key = configured.encode()
        if len(key) < MIN_KEY_BYTES:
            raise InvalidInput(f"VIKING_BRIDGE_EXPORT_KEY must be at least {MIN_KEY_BYTES} bytes")
        return key
    path = Path(home) / SEAL_KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(secrets.token_hex(32) + "\n")
    key = path.read_text(encoding="ascii").strip().encode()
    if len(key) < MIN_KEY_BYTES:
        raise InvalidInput(f"{path} holds no export key (at least {MIN_KEY_BYTES} characters); delete it to make a new one")
    return key


@dataclass
class ExportSummary:
    count: int
    seal: str
    scopes: dict[str, int]


@dataclass
class ImportReport:
    written: int = 0
    already_present: int = 0
    expired: int = 0  # lines whose memory had expired by the import: gone, so not re-created
    refused: list[tuple[int, str]] = field(default_factory=list)  # (line number, why)
    dropped_metadata_keys: int = 0

    @property
    def ok(self) -> bool:
        return not self.refused


def _line(memory: StoredMemory) -> dict[str, Any]:
    return {
        "type": "memory", "memory_id": memory.id, "scope": str(memory.scope), "kind": memory.kind, "status": memory.status.value,
        "content": memory.content, "confidence": memory.confidence, "subject_user_id": memory.subject_user_id,
        "metadata": dict(memory.metadata), "provenance": memory.provenance.to_dict(),
        "created_at": memory.created_at, "updated_at": memory.updated_at, "expires_at": memory.expires_at,
    }


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n"


async def export_jsonl(bridge: Any, identity: MemoryIdentity, out: TextIO, *, key: bytes) -> ExportSummary:
    """Write every memory `identity` may export to `out`, sealed with `key` (see the module docstring)."""
    stream = await bridge.execute(identity, ExportMemories())
    out.write(_dump({"format": FORMAT, "version": VERSION, "tenant_id": identity.tenant_id, "exported_by": identity.principal,
                     "exported_at": time.time()}))
    digest, count, scopes = hmac.new(key, digestmod=hashlib.sha256), 0, {}
    async for memory in stream:
        line = _dump(_line(memory))
        digest.update(line.encode())
        out.write(line)
        count += 1
        scopes[str(memory.scope)] = scopes.get(str(memory.scope), 0) + 1
    out.write(_dump({"type": "end", "count": count, "hmac_sha256": digest.hexdigest()}))
    return ExportSummary(count, digest.hexdigest(), scopes)


def read_export(lines: Iterable[str | bytes], *, key: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, memory record) of a whole, intact export sealed with `key`; `InvalidInput`
    naming the line for anything else (invalid UTF-8 included) — checked to the end line before the
    first record is yielded."""
    records, digest, header, end = [], hmac.new(key, digestmod=hashlib.sha256), None, None
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"line {number}: not UTF-8 text (byte {exc.start})") from None
        if end is not None:
            raise InvalidInput(f"line {number}: content after the end line")
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"line {number}: not a JSON object")
        if header is None:
            if obj.get("format") != FORMAT or obj.get("version") != VERSION:
                raise InvalidInput(f"line {number}: not a {FORMAT} v{VERSION} file")
            header = obj
        elif obj.get("type") == "memory":
            digest.update(raw.encode() if raw.endswith("\n") else (raw + "\n").encode())
            records.append((number, obj))
        elif obj.get("type") == "end":
            end = obj
        else:
            raise InvalidInput(f"line {number}: unknown record type {obj.get('type')!r}")
    if header is None or end is None:
        raise InvalidInput("the export is truncated: no end line")
    seal = end.get("hmac_sha256")
    if end.get("count") != len(records) or not isinstance(seal, str) or not hmac.compare_digest(seal, digest.hexdigest()):
        raise InvalidInput("the export does not match its sealed end line (count or seal): edited, truncated, or sealed with another export key")
    yield from records


def _import_key(record: dict[str, Any]) -> str:
    return "im" + hashlib.sha256(f"import|{record.get('scope')}|{record.get('memory_id')}".encode()).hexdigest()[:40]


async def import_jsonl(bridge: Any, identity: MemoryIdentity, source: Iterable[str | bytes], *, key: bytes) -> ImportReport:
    """Write each exported memory (of a file sealed with `key`) into its scope as `identity`, where
    the write policy allows."""
    report = ImportReport()
    policy = bridge.runtime.policy
    for number, record in read_export(source, key=key):
        try:
            scope = ScopeKey.parse(str(record.get("scope", "")))
            kind, content = record.get("kind"), record.get("content")
            department = scope.owner_id if scope.visibility is Visibility.DEPARTMENT else None
            decided = policy.decide_write(identity, kind, scope.visibility, department_id=department)
            if decided.scope != scope:
                raise NotPermitted(f"{identity.principal} would write it to {decided.scope}, not {scope}")
            meta = {k: v for k, v in (record.get("metadata") or {}).items() if not k.startswith(RESERVED_METADATA_PREFIX)}
            report.dropped_metadata_keys += len(record.get("metadata") or {}) - len(meta)
            meta.update({"imported_from": str(record.get("memory_id")), "imported_created_at": float(record.get("created_at") or 0.0)})
            expires_at = record.get("expires_at")
            if expires_at is not None:  # the copy lives no longer than the exported memory
                if isinstance(expires_at, bool) or not isinstance(expires_at, (int, float)):
                    raise InvalidInput(f"expires_at must be epoch seconds or null, got {type(expires_at).__name__}")
                if expires_at <= bridge.runtime.clock():
                    report.expired += 1
                    continue
            result = await bridge.remember(
                identity, content, kind, visibility=scope.visibility, department_id=department, idempotency_key=_import_key(record),
                metadata=meta, confidence=float(record.get("confidence", 1.0)), expires_at=expires_at,
            )
        except (InvalidInput, NotPermitted, TypeError, ValueError) as exc:
            report.refused.append((number, str(exc)))
            continue
        if result.deduplicated:
            report.already_present += 1
        else:
            report.written += 1
    return report
