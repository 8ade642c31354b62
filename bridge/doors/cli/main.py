"""The `viking-bridge` command: demo, remember, recall, list, get, edit, history, forget, audit, purge-expired, keys, migrate, re-embed, contract, mcp.

`remember`/`recall`/`list`/`get`/`edit`/`history`/`forget`/`audit` act on the local store in
`VIKING_BRIDGE_HOME` as the development identity (see docs/identity.md; refused in production
mode), or, with `--url` (or `VIKING_BRIDGE_URL`), on a running service as whoever the credential
says (`bridge/doors/cli/remote.py`); both modes print the same JSON shapes. Every error is printed
as one line on stderr with exit status 2 — never a traceback, never a credential.

Commands provided by other packages (`contract`, from the contract suite) are found through the
`viking_bridge.commands` entry-point group, never imported by name: the library must not depend
on its test suite (the layering contracts in pyproject.toml forbid it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from importlib.metadata import entry_points
from typing import Any, Callable, NoReturn, Sequence

from pydantic import ValidationError

from bridge.doors.cli.memories import dump_json, local_memories, recall_json
from bridge.errors import InvalidInput, VikingBridgeError

EXIT_ERROR = 2
COMMANDS_GROUP = "viking_bridge.commands"
# Why a plug-in command may be missing, per command: the package that provides it.
_PLUGIN_COMMANDS = {"contract": "the contract suite (contract_tests, shipped with viking-bridge)"}


def plugin_command(name: str) -> Callable[[list[str]], int] | None:
    """The `main(argv) -> int` registered as `name` in the `viking_bridge.commands` group, if any."""
    for ep in entry_points(group=COMMANDS_GROUP, name=name):
        return ep.load()
    return None


_SECRET_FLAGS = ("--api-key", "--token")
_SECRET_SHAPES = re.compile(r"vbk_[A-Za-z0-9_\-]+|eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*")


def redact(text: str, argv: Sequence[str]) -> str:
    """`text` with every credential of `argv` (the value of --api-key/--token) and anything shaped
    like an API key or a JWT replaced by `***`: argparse quotes the arguments it rejects."""
    secrets: list[str] = []
    for n, arg in enumerate(argv):
        for flag in _SECRET_FLAGS:
            if arg == flag and n + 1 < len(argv):
                secrets.append(argv[n + 1])
            elif arg.startswith(flag + "="):
                secrets.append(arg[len(flag) + 1:])
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return _SECRET_SHAPES.sub("***", text)


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors redacted (`redact`): they echo the arguments verbatim."""

    argv: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {redact(message, _Parser.argv)}\n")


def _client_options(parser: argparse.ArgumentParser, default: object) -> None:
    """The global options, accepted before or after the subcommand (a subcommand's copy has
    SUPPRESS as default, so it does not overwrite what came before the subcommand)."""
    parser.add_argument(
        "--reinitialise", action="store_true", default=default if default is argparse.SUPPRESS else False,
        help="bind the bridge state to the store it finds even if they disagree (a replaced, emptied or rolled-back store); "
             "only after you have checked why they disagree",
    )
    parser.add_argument("--url", default=default, help="talk to a running memory service instead of the local store (client mode; default VIKING_BRIDGE_URL)")
    parser.add_argument("--api-key", default=default, help="client mode: the API key to present (the service decides who you are; default VIKING_BRIDGE_API_KEY, which keeps it out of shell history)")
    parser.add_argument("--token", default=default, help="client mode: a JWT bearer token to present (default VIKING_BRIDGE_TOKEN)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="viking-bridge", description="Permission-first memory bridge for multi-tenant, multi-agent AI systems.")
    _client_options(parser, None)
    common = argparse.ArgumentParser(add_help=False)
    _client_options(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def add(name: str, **kw: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kw)

    p = add("demo", help="run a two-tenant isolation scenario on a temporary local store", description="Run a realistic multi-tenant, multi-agent scenario on a temporary local store and check its isolation guarantees.")
    p.add_argument("scenario", nargs="?", choices=["multi-agent"], help="multi-agent: seed 002's phase-7 DAG over federated injection (bridge/doors/cli/demo_multiagent.py)")
    p.add_argument("--dry-run", action="store_true", help="multi-agent: deterministic agent stubs, no model (the only mode; accepted as in the seed's command)")
    p.add_argument("--roles", help="multi-agent: the role file (default examples/roles/phase7.toml)")

    p = add("remember", help="store a memory as the development identity")
    p.add_argument("content", help="the text, - for stdin, or @FILE (client mode)")
    p.add_argument("--kind", required=True, help="profile, preference, event, fact, decision, procedure, experience, standard, note")
    p.add_argument("--visibility", help="private, agent, workspace, department, tenant, global (default: by kind)")
    p.add_argument("--department", help="department id for department visibility")
    p.add_argument("--idempotency-key")
    p.add_argument("--ttl", type=float, help="seconds until the memory expires (never recalled after, then purged)")

    p = add("recall", help="recall memories as the development identity")
    p.add_argument("query")
    p.add_argument("--purpose", default="chat", help="chat or coding")
    p.add_argument("--budget", type=int, help="token budget")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")

    p = add("list", help="list your memories as JSON pages: every scope you read by default, or one --scope")
    p.add_argument("--scope", help="one readable scope key (default: all your memories)")
    p.add_argument("--status", default="active", choices=["active", "pending", "superseded"])
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor", help="the next_cursor of the previous page")
    p = add("get", help="one memory as JSON, by id (found among your memories) or by --scope and id")
    p.add_argument("memory_id")
    p.add_argument("--scope")
    p = add("edit", help="correct a memory in place (same id, re-embedded, audited); prints it as JSON")
    p.add_argument("memory_id")
    p.add_argument("--scope", help="its scope (default: found among your memories)")
    p.add_argument("--content", help="the new text, - for stdin, or @FILE")
    p.add_argument("--metadata", help="the new metadata, a JSON object (replaces yours; the bridge's own keys stay)")
    p.add_argument("--confidence", type=float)
    p = add("history", help="who changed a memory, what and when (from the audit log), as JSON")
    p.add_argument("memory_id")
    p.add_argument("--scope")
    p.add_argument("--limit", type=int, default=100)

    p = add("forget", help="forget one memory (SCOPE MEMORY_ID) or every memory of a subject")
    p.add_argument("scope", nargs="?")
    p.add_argument("memory_id", nargs="?")
    p.add_argument("--subject", help="forget everything about this user id (yourself, or any user as admin)")

    p = add("audit", help="show the audit log (your own rows; a tenant admin sees the tenant)")
    p.add_argument("--action")
    p.add_argument("--limit", type=int, default=20)

    p = add("export", help="write every memory you may export to a JSON Lines file (docs/migration.md)")
    p.add_argument("file", help="where to write it (- for stdout)")
    p = add("import", help="write the memories of an export file as yourself, where the write policy allows")
    p.add_argument("file", help="an export file (- for stdin)")

    p = add("approve", help="client mode: approve a pending memory")
    p.add_argument("scope")
    p.add_argument("memory_id")
    p = add("grant", help="client mode: let a user read a scope for a while (tenant admin)")
    p.add_argument("grantee")
    p.add_argument("scope")
    p.add_argument("--ttl", type=float, default=3600.0)
    p.add_argument("--reason", required=True)
    p.add_argument("--agent", help="restrict the grant to one agent of the grantee")
    p = add("inject", help="client mode: inject context into a child agent (seed 000)")
    p.add_argument("child")
    p.add_argument("task")
    p.add_argument("--depth", default="standard", help="minimal, standard or full")
    p.add_argument("--json", action="store_true")

    p = add("purge-expired", help="delete the tenant's expired memories, audited (tenant admin; prints progress)")
    p.add_argument("--batch", type=int, default=1000, help="memories deleted per run (each run reports its progress)")
    p = add("serve", help="run the memory service (HTTP API) on uvicorn; see docs/service.md")
    p.add_argument("--host", help="bind address (default VIKING_BRIDGE_SERVICE_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default VIKING_BRIDGE_SERVICE_PORT or 8080)")
    p.add_argument("--workers", type=int, help="worker processes (default VIKING_BRIDGE_SERVICE_WORKERS or 1)")

    sub.add_parser("mcp", help="serve the bridge as an MCP server (stdio or streamable HTTP); see README 'Use it from MCP'", add_help=False)
    sub.add_parser("keys", help="issue, revoke and list API keys (python -m identity.admin)", add_help=False)
    sub.add_parser("dev-token", help="print a development JWT (development mode, VIKING_BRIDGE_JWT__DEV_SIGNING_KEY_FILE set); see docs/mcp.md", add_help=False)
    sub.add_parser("migrate", help="copy memories between backends, resumably, and verify (bridge/migrate)", add_help=False)
    sub.add_parser("re-embed", help="re-embed the local store with another embedder, in place or into a new store", add_help=False)
    sub.add_parser("contract", help="run the leakage contract suite against an adapter or live deployment", add_help=False)
    return parser


async def _dev_session(reinitialise: bool = False):
    from bridge.facade import open_bridge
    from identity.providers.base import DevEnvironment
    from identity.providers.dev import DevEnvironmentProvider

    identity = await DevEnvironmentProvider().authenticate(DevEnvironment())
    return open_bridge(reinitialise=reinitialise), identity


async def _run(args: argparse.Namespace) -> int:
    if args.command == "demo" and args.scenario == "multi-agent":
        from pathlib import Path

        from bridge.doors.cli.demo_multiagent import run_multiagent_demo

        return 0 if await run_multiagent_demo(sys.stdout, Path(args.roles) if args.roles else None) else 1
    if args.command == "demo":
        from bridge.doors.cli.demo import run_demo

        return 0 if await run_demo(sys.stdout) else 1
    bridge, identity = await _dev_session(args.reinitialise)
    try:
        if args.command == "remember":
            result = await bridge.remember(identity, args.content, args.kind, visibility=args.visibility, department_id=args.department, idempotency_key=args.idempotency_key, ttl_s=args.ttl)
            print(f"{result.status} {result.scope} {result.memory_id} ({result.reason}{', deduplicated' if result.deduplicated else ''})")
        elif args.command == "recall":
            recalled = await bridge.recall(identity, args.query, purpose=args.purpose, budget_tokens=args.budget)
            print(dump_json(recall_json(recalled)) if args.json else recalled.context)
        elif args.command in ("list", "get", "edit", "history"):
            print(dump_json(await local_memories(bridge, identity, args)))
        elif args.command == "forget":
            if args.subject:
                if args.scope or args.memory_id:
                    raise InvalidInput("give either SCOPE MEMORY_ID or --subject, not both")
                print(f"forgot {await bridge.forget_subject(identity, args.subject)} memories of {args.subject}")
            else:
                if not (args.scope and args.memory_id):
                    raise InvalidInput("forget needs SCOPE and MEMORY_ID (as printed by recall), or --subject USER")
                found = await bridge.forget(identity, (args.scope, args.memory_id))
                print("forgotten" if found else "no such memory in that scope")
        elif args.command == "purge-expired":
            total = 0
            while True:  # bounded runs: a large purge shows its progress and can be stopped between runs
                report = await bridge.purge_expired(identity, max_deletions=args.batch)
                total += report.purged
                print(f"purged {total} expired memories of {report.tenant_id} so far ({report.scopes_scanned} scopes scanned){'' if report.complete else ', continuing'}", flush=True)
                if report.complete:
                    break
        elif args.command in ("export", "import"):
            return await _portability(bridge, identity, args)
        elif args.command == "audit":
            for e in await bridge.audit_events(identity, action=args.action, limit=args.limit):
                print(json.dumps({"seq": e.seq, "ts": round(e.ts, 3), "actor": e.actor, "action": e.action, "memory_ids": e.memory_ids, "scopes": e.scopes, "grant_ids": e.grant_ids}, ensure_ascii=False))
    finally:
        await bridge.aclose()
    return 0


async def _portability(bridge, identity, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    import contextlib

    from bridge.assembly.settings import load_bridge_settings
    from bridge.migrate.jsonl import export_jsonl, export_key, import_jsonl

    settings = load_bridge_settings()
    key = export_key(settings.home, settings.export_key.get_secret_value() if settings.export_key else None)
    if args.command == "export":
        with (open(args.file, "w", encoding="utf-8") if args.file != "-" else contextlib.nullcontext(sys.stdout)) as out:  # noqa: SIM115
            summary = await export_jsonl(bridge, identity, out, key=key)
        print(f"exported {summary.count} memories from {len(summary.scopes)} scopes", file=sys.stderr)
        return 0
    # bytes: a line that is not UTF-8 is refused naming it (read_export), never a traceback
    with (open(args.file, "rb") if args.file != "-" else contextlib.nullcontext(sys.stdin.buffer)) as source:  # noqa: SIM115
        report = await import_jsonl(bridge, identity, source.readlines(), key=key)
    print(f"imported {report.written}, already present {report.already_present}, refused {len(report.refused)}", file=sys.stderr)
    for number, why in report.refused[:20]:
        print(f"  line {number}: {why}", file=sys.stderr)
    return 0 if report.ok else 1


def _client_defaults(args: argparse.Namespace) -> None:
    """Client mode from the environment where the command line says nothing: the URL from
    VIKING_BRIDGE_URL, the credential from VIKING_BRIDGE_API_KEY or VIKING_BRIDGE_TOKEN unless
    one was given as a flag (a flag always wins, so the two never clash)."""
    from bridge.assembly.client import client_settings

    env = client_settings()
    if args.url is None:
        args.url = env.url
    if args.api_key is None and args.token is None:
        args.api_key = env.api_key.get_secret_value() if env.api_key else None
        args.token = env.token.get_secret_value() if env.token and not env.api_key else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["keys"]:
        from bridge.policy.config import Role
        from identity.admin import main as keys_main

        return keys_main(argv[1:], roles=[r.value for r in Role])  # a key carries only roles the policy knows
    if argv[:1] == ["dev-token"]:
        from identity.devtoken import main as dev_token_main

        return dev_token_main(argv[1:])
    if argv[:1] == ["mcp"]:
        from bridge.doors.mcp.run import main as mcp_main

        return mcp_main(argv[1:])
    if argv[:1] == ["migrate"]:
        from bridge.migrate.cli import main as migrate_main

        return migrate_main(argv[1:])
    if argv[:1] == ["re-embed"]:
        from bridge.migrate.reembed import main as reembed_main

        return reembed_main(argv[1:])
    if argv[:1] and argv[0] in _PLUGIN_COMMANDS:
        try:
            command = plugin_command(argv[0])
        except (ImportError, AttributeError) as exc:  # its module is missing or broken, or names no such function
            print(f"viking-bridge: error: the {argv[0]!r} command is registered but cannot be loaded: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if command is None:
            print(f"viking-bridge: error: the {argv[0]!r} command needs {_PLUGIN_COMMANDS[argv[0]]}, which is not installed"
                  f" (no {COMMANDS_GROUP!r} entry point named {argv[0]!r}; reinstall with pip install viking-bridge)", file=sys.stderr)
            return EXIT_ERROR
        return command(argv[1:])
    _Parser.argv = argv
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            from bridge.doors.http.server import serve

            return serve(args.host, args.port, args.workers)
        _client_defaults(args)
        if args.url:
            from bridge.doors.cli.remote import run_client

            return run_client(args)
        if args.command in ("approve", "grant", "inject"):
            raise InvalidInput(f"{args.command} needs a running service: viking-bridge --url URL --api-key KEY {args.command} ...")
        return asyncio.run(_run(args))
    except VikingBridgeError as exc:  # the one error tree, mapped once
        print(f"viking-bridge: error: {redact(str(exc), argv)}", file=sys.stderr)
    except ValidationError as exc:
        first = exc.errors()[0]
        print(f"viking-bridge: error: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}", file=sys.stderr)
    except KeyboardInterrupt:
        print("viking-bridge: interrupted", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
