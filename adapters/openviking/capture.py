"""Server-side extraction on OpenViking: capturing a conversation into a session, waiting for
the server to extract memories from it, and reading those extracted memories back.

Why apart from records: extracted memories are made by the server, not by us, so they carry no
envelope of ours; an index maps them back to the scope whose session produced them. What it
must never do: read an extracted memory under any principal but the capturing scope's, or
return one the index cannot place.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import datetime
from typing import Any, Sequence

from adapters.base import CaptureReceipt, ConversationMessage, Hit, Provenance, SearchQuery, Status, StoredMemory, require_scope
from adapters.errors import InvalidRequest
from adapters.openviking.errors import OVNotFound
from adapters.openviking.extraction import (
    CAPTURE_DIR,
    EXTRACTED_KINDS,
    CaptureRecord,
    ExtractionIndex,
    decode_capture,
    encode_capture,
    extracted_id,
    stored_from_extracted,
)
from adapters.openviking.mapping import Principal
from adapters.openviking.principals import OpenVikingPrincipalsBase
from adapters.scopes import ScopeEntry, ScopeKey, Visibility


_SESSION_ID = re.compile(r"^vb-[0-9a-f]{40}\Z")


_ARCHIVE = re.compile(r"^archive_[0-9]{1,9}\Z")


class OpenVikingCapture(OpenVikingPrincipalsBase):
    """capture / wait_for_capture and the search over server-extracted memories."""

    # -- conversation capture (server-side extraction) -------------------------------------------
    async def capture(self, scope: ScopeKey, messages: Sequence[ConversationMessage], *, session_key: str,
                      provenance: Provenance) -> CaptureReceipt:
        """Post messages to the scope's own session, record the capture, commit; extraction runs on the server.

        Only PRIVATE scopes: 0.5.2 writes what it extracts into the committing user's own
        `memories/<type>/` directories, and only a private scope owns those (an agent scope is a peer
        inside the user, whose extraction targets the server cannot be told apart from the user's).
        The capture record (`memories/vbcap/<session>.md`, in the same user's space) holds the
        ScopeKey and provenance; `search` surfaces an extracted file only through it."""
        scope = require_scope(scope)
        if scope.visibility is not Visibility.PRIVATE:
            raise InvalidRequest("conversation capture is only for private scopes", backend=self.name, scope=scope)
        if not isinstance(session_key, str) or not session_key:
            raise InvalidRequest("session_key must be a non-empty string")
        if not isinstance(provenance, Provenance):
            raise InvalidRequest("capture needs a Provenance")
        if not messages:
            raise InvalidRequest("capture needs at least one message", backend=self.name, scope=scope)
        p = self.mapper.principal(scope)
        session_id = "vb-" + hashlib.sha256(f"{scope}\x00{session_key}".encode()).hexdigest()[:40]
        for message in messages:
            if message.role not in ("user", "assistant", "system"):
                raise InvalidRequest(f"unknown message role {message.role!r}")
        record = encode_capture(CaptureRecord(session_id, str(scope), provenance, time.time()))
        record_uri = f"{self._capture_dir(p)}/{session_id}.md"
        await self._call(p, True, lambda a: self._client.write(a, record_uri, record, mode="replace", wait=True))
        for message in messages:
            await self._call(p, True, lambda a, m=message: self._client.add_message(a, session_id, m.role, m.content))
        result = await self._call(p, True, lambda a: self._client.commit(a, session_id))
        index = self._extracted.get(str(scope))
        if index is not None:
            index.captures.pop(session_id, None)  # re-read: the provenance may have changed
        self._extracted_checked.pop(str(scope), None)
        return CaptureReceipt(backend_session_id=session_id, accepted_messages=len(messages), task_id=result.get("task_id"))

    async def wait_for_capture(self, scope: ScopeKey, receipt: CaptureReceipt, *, deadline: float | None = None) -> dict[str, Any]:
        """Poll the commit task until it finishes (or `TaskTimeout` after the deadline), then wait
        for the server's processing queue to drain: a completed extraction task has written its
        files, but their vectors are indexed asynchronously, so without this wait a search right
        after it may not surface what the task extracted yet."""
        p = self.mapper.principal(require_scope(scope))
        if not receipt.task_id:
            raise InvalidRequest("receipt has no task id")
        limit = deadline or self._capture_deadline
        started = time.monotonic()
        task = await self._call(p, False, lambda a: self._client.wait_task(a, receipt.task_id, deadline=limit))
        if task.get("status") == "completed":
            remaining = max(1.0, limit - (time.monotonic() - started))
            await self._call(p, False, lambda a: self._client.wait_processed(a, timeout=remaining))
        return task

    # -- extracted memories (server-side extraction) ------------------------------------------------
    def _capture_dir(self, p: Principal) -> str:
        return f"{p.user_root}/memories/{CAPTURE_DIR}"

    async def _extraction_index(self, p: Principal, *, force: bool = False) -> ExtractionIndex:
        """The scope's index of extracted files, refreshed at most every `extraction_refresh` s."""
        key = str(p.scope)
        index = self._extracted.setdefault(key, ExtractionIndex(p.scope))
        now = time.monotonic()
        if not force and now - self._extracted_checked.get(key, -1e9) < self._extraction_refresh:
            return index
        async with self._lock("extraction:" + key):
            if not force and now - self._extracted_checked.get(key, -1e9) < self._extraction_refresh:
                return index
            await self._refresh_index(p, index)
            self._extracted_checked[key] = time.monotonic()
        return index

    async def _refresh_index(self, p: Principal, index: ExtractionIndex) -> None:
        try:
            entries = await self._call(p, False, lambda a: self._client.ls(a, self._capture_dir(p)))
        except OVNotFound:
            return
        for e in entries:
            name = str(e.get("uri", "")).rsplit("/", 1)[-1]
            sid = name[:-3] if name.endswith(".md") else ""
            if e.get("isDir") or not _SESSION_ID.match(sid) or sid in index.captures:
                continue
            try:
                text = await self._call(p, False, lambda a, s=sid: self._client.read(a, f"{self._capture_dir(p)}/{s}.md"))
            except OVNotFound:
                continue
            record = decode_capture(text, expected_session=sid)
            if record is not None and record.scope == str(p.scope):  # a record naming another scope is ignored
                index.captures[sid] = record
        diffs: list[tuple[float, str, str, dict[str, Any]]] = []
        for sid in list(index.captures):
            history = f"{p.user_root}/sessions/{sid}/history"
            try:
                archives = await self._call(p, False, lambda a, h=history: self._client.ls(a, h))
            except OVNotFound:
                continue
            for arch in archives:
                uri = str(arch.get("uri", ""))
                if not arch.get("isDir") or not _ARCHIVE.match(uri.rsplit("/", 1)[-1]) or uri in index.seen_archives:
                    continue
                if uri != f"{history}/{uri.rsplit('/', 1)[-1]}":
                    continue
                try:
                    raw = await self._call(p, False, lambda a, u=uri: self._client.read(a, f"{u}/memory_diff.json"))
                    diff = json.loads(raw)
                except OVNotFound:
                    continue  # this commit is still extracting
                except ValueError:
                    index.seen_archives.add(uri)
                    continue
                try:
                    at = datetime.fromisoformat(str(diff.get("extracted_at"))).timestamp()
                except (TypeError, ValueError):
                    at = 0.0
                diffs.append((at, uri, sid, diff))
        for at, uri, sid, diff in sorted(diffs, key=lambda d: (d[0], d[1])):
            index.apply_diff(sid, diff, p.user_root, at)
            index.seen_archives.add(uri)

    async def _search_extracted(self, entry: ScopeEntry, p: Principal, query: SearchQuery) -> list[Hit]:
        if p.scope.visibility is not Visibility.PRIVATE or p.peer is not None or Status.ACTIVE not in query.statuses:
            return []
        types = [t for t, k in EXTRACTED_KINDS.items() if query.kinds is None or k in query.kinds]
        if not types:
            return []
        index = await self._extraction_index(p)
        if not index.captures:
            return []
        if entry.memory_ids is not None:
            target: str | list[str] = sorted(f.uri for f in index.files.values()
                                             if f.memory_type in types and extracted_id(p.scope, f.uri) in entry.memory_ids)
            if not target:
                return []
        else:
            target = [f"{p.user_root}/memories/{t}" for t in types]
        fetch, refreshed = query.limit, False
        while True:
            try:
                result = await self._call(p, False, lambda a: self._client.find(
                    a, query.text, target_uri=target, limit=fetch, level=2, read_content=True))
            except OVNotFound:
                return []
            raw = [r for r in (result or {}).get("memories", []) if isinstance(r, dict)]
            if not refreshed and any(isinstance(r.get("uri"), str) and r["uri"] not in index.files for r in raw):
                index = await self._extraction_index(p, force=True)  # a capture finished since the last look
                refreshed = True
            kept: list[Hit] = []
            for item in raw:
                hit = await self._extracted_hit(item, index, p, entry, types)
                if hit is not None:
                    kept.append(hit)
            if len(kept) >= query.limit or len(raw) < fetch or fetch >= self._max_fetch:
                return kept[: query.limit]
            fetch = min(self._max_fetch, fetch * 4)

    async def _extracted_hit(self, item: dict[str, Any], index: ExtractionIndex, p: Principal, entry: ScopeEntry,
                             types: list[str]) -> Hit | None:
        uri = item.get("uri")
        if item.get("level") not in (2, None) or not isinstance(uri, str):
            return None
        f = index.files.get(uri)
        if f is None or f.memory_type not in types or f"memory_type={f.memory_type}" not in (item.get("tags") or []):
            return None  # not produced by one of this scope's captures, or not tagged by the extractor
        capture = index.captures.get(f.session_id)
        if capture is None or capture.scope != str(p.scope):
            return None
        memory_id = extracted_id(p.scope, uri)
        if entry.memory_ids is not None and memory_id not in entry.memory_ids:
            return None
        content = item.get("content")
        if not isinstance(content, str):
            try:
                content = await self._call(p, False, lambda a: self._client.read(a, uri))
            except OVNotFound:
                return None
        score = item.get("score")
        score = min(1.0, max(0.0, float(score))) if isinstance(score, (int, float)) else 0.0
        return Hit(memory=stored_from_extracted(p.scope, f, capture, content), scope=p.scope, score=score)

    async def _extracted_memory(self, p: Principal, memory_id: str) -> StoredMemory | None:
        """An extracted memory of a private scope by id (for get/delete/list), or None."""
        if p.scope.visibility is not Visibility.PRIVATE or p.peer is not None:
            return None
        index = await self._extraction_index(p)
        f = index.by_id(memory_id)
        if f is None:
            index = await self._extraction_index(p, force=True)
            f = index.by_id(memory_id)
        capture = index.captures.get(f.session_id) if f is not None else None
        if f is None or capture is None or capture.scope != str(p.scope):
            return None
        try:
            content = await self._call(p, False, lambda a: self._client.read(a, f.uri))
        except OVNotFound:
            return None
        return stored_from_extracted(p.scope, f, capture, content)
