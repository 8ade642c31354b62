"""`viking-bridge re-embed`: move a local store to another embedder, in place or into a new store.

    viking-bridge re-embed [--home DIR] [--embedder auto|hashing|semantic|hybrid|openai]
    viking-bridge re-embed --into NEW_DIR [--home DIR] [--embedder ...] --tenant T ...

In place, every vector and the recorded signature change in one transaction
(`LocalBackend.reembed`): the store is in the old space or the new one, never a mix, and ids,
contents, the audit binding and the write counter stay as they were. `--into` is a migration
(bridge/migrate) into a new store created with the new embedder — the old store is untouched,
and the copy is verified. The embedder is named like `VIKING_BRIDGE_EMBEDDER` (`auto`: the
default for a new store — hybrid where the semantic encoder installs).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from bridge.errors import InvalidInput, VikingBridgeError

__all__ = ["main", "embedder_named", "reembed_in_place"]

EXIT_ERROR = 2


def embedder_named(name: str) -> Any:
    """The embedder `name` means, built like `VIKING_BRIDGE_EMBEDDER` (its `_URL`, `_MODEL`, ...)."""
    from adapters.shared.embedding import default_embedder
    from bridge.assembly.settings import load_bridge_settings

    choices = ("auto", "hashing", "semantic", "hybrid", "openai")
    if name not in choices:
        raise InvalidInput(f"unknown embedder {name!r}; one of: {', '.join(choices)}")
    built = load_bridge_settings().model_copy(update={"embedder": name}).make_embedder()
    return default_embedder() if built is None else built


async def reembed_in_place(home: Path, embedder: Any) -> tuple[str, str, int]:
    """(old signature, new signature, rows) after re-embedding the store of bridge home `home`."""
    from adapters.local import LocalBackend
    from bridge.state.sqlite import SqliteState

    state = SqliteState(home / "bridge.sqlite3")
    try:
        bound = state.bound_store_id()
    finally:
        state.close()
    backend = LocalBackend(home / "store", expect_existing=True, expected_store_id=bound)
    try:
        old = backend.embedder.signature
        rows = await backend.reembed(embedder)
        return old, backend.embedder.signature, rows
    finally:
        await backend.aclose()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="viking-bridge re-embed", description="Re-embed a local store with another embedder.")
    p.add_argument("--home", type=Path, help="the bridge home whose store to re-embed (default VIKING_BRIDGE_HOME)")
    p.add_argument("--embedder", default="auto", help="auto, hashing, semantic, hybrid or openai (default auto)")
    p.add_argument("--into", type=Path, help="copy into a new store here instead of re-embedding in place (a verified migration)")
    p.add_argument("--tenant", action="append", default=[], help="with --into: a tenant to copy (repeat)")
    return p


async def _run(args: argparse.Namespace) -> int:
    from bridge.assembly.settings import load_bridge_settings

    home = args.home or load_bridge_settings().home
    embedder = embedder_named(args.embedder)
    if args.into is None:
        if args.tenant:
            raise InvalidInput("--tenant only applies with --into (in place, the whole store is re-embedded)")
        started = time.monotonic()
        print(f"re-embed: {home} with {embedder.signature} (in place, one transaction)", file=sys.stderr, flush=True)
        old, new, rows = await reembed_in_place(Path(home), embedder)
        print(f"re-embedded {rows} memories: {old} -> {new} in {time.monotonic() - started:.1f}s")
        return 0
    from bridge.migrate.cli import LineProgress
    from bridge.migrate.endpoints import open_endpoint
    from bridge.migrate.run import migrate

    if not args.tenant:
        raise InvalidInput("--into copies named tenants: give --tenant T (repeat for several)")
    async with open_endpoint(f"local:{home}", source=True) as source, open_endpoint(f"local:{args.into}", embedder=embedder) as target:
        report = await migrate(source, target, args.tenant, progress=LineProgress(sys.stderr), operator="re-embed")
    print(f"copied {report.copied.copied} memories into {args.into} with {embedder.signature}; verified: {report.ok}")
    return 0 if report.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return asyncio.run(_run(args))
    except VikingBridgeError as exc:
        print(f"viking-bridge re-embed: error: {exc}", file=sys.stderr)
    return EXIT_ERROR
