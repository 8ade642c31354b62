"""`list`, `get`, `edit`, `history` and `recall --json`: the CLI's JSON, one shape in both modes.

Locally the results are the bridge's own result models dumped as JSON; with `--url` they are the
service's answers, which are the same models (`bridge/results.py`) serialised by the service —
so a script reads the same keys either way (`memories`, `next_cursor`, `changes`, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bridge.errors import InvalidInput

__all__ = ["read_content", "dump_json", "recall_json", "edit_fields", "local_memories"]


def read_content(value: str) -> str:
    """A text argument: itself, `-` for stdin, or `@FILE` for a file's contents."""
    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        try:
            return Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read {value[1:]}: {exc.strerror}") from None
    return value


def dump_json(value: Any) -> str:
    """The one JSON rendering of both modes: what the service answers, indented."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def recall_json(result: Any) -> dict[str, Any]:
    """A local recall in the service's RecallResponse shape (`memories`, no query or audit seq),
    so a script reads the same keys whether it ran locally or with --url."""
    body: dict[str, Any] = result.model_dump(mode="json", exclude={"query", "audit_seq"})
    body["memories"] = body.pop("items")
    return body


def edit_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The fields an `edit` changes, from --content (text, - or @FILE), --metadata (JSON), --confidence."""
    fields: dict[str, Any] = {}
    if args.content is not None:
        fields["content"] = read_content(args.content)
    if args.metadata is not None:
        try:
            fields["metadata"] = json.loads(args.metadata)
        except ValueError as exc:
            raise InvalidInput(f"--metadata must be a JSON object: {exc}") from None
        if not isinstance(fields["metadata"], dict):
            raise InvalidInput("--metadata must be a JSON object")
    if args.confidence is not None:
        fields["confidence"] = args.confidence
    if not fields:
        raise InvalidInput("edit needs --content, --metadata or --confidence")
    return fields


async def local_memories(bridge, identity, args: argparse.Namespace) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from bridge.operations import reads

    if args.command == "list":
        page = await bridge.execute(identity, reads.ListMemories(scope=args.scope, cursor=args.cursor, limit=args.limit, status=args.status))
        return page.model_dump(mode="json")
    if args.command == "history":
        return (await bridge.execute(identity, reads.MemoryHistory(memory_id=args.memory_id, scope=args.scope, limit=args.limit))).model_dump(mode="json")
    if args.command == "get" or args.scope is None:
        found = await bridge.execute(identity, reads.FindMemory(memory_id=args.memory_id) if args.scope is None else reads.GetMemory(ref=(args.scope, args.memory_id)))
        if args.command == "get":
            return found.model_dump(mode="json")
        args.scope = found.scope
    edited = await bridge.execute(identity, reads.EditMemory(ref=(args.scope, args.memory_id), **edit_fields(args)))
    return edited.model_dump(mode="json")
