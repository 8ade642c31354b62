"""The CLI as a client of a running service: `viking-bridge --url URL (--api-key K | --token T) ...`.

Each command is one HTTP call with a real credential — the service decides who that is; the
CLI never names an identity. `remember` takes its content as text, `-` (stdin) or `@file`.
Problems come back as one `viking-bridge: error: <status> <detail>` line (exit 2), never a
traceback; the credential is never printed.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import quote

import httpx

from bridge.errors import InvalidInput, VikingBridgeError
from bridge.doors.cli.memories import dump_json, edit_fields, read_content

__all__ = ["run_client", "ServiceProblem", "read_content"]


class ServiceProblem(VikingBridgeError):
    """The service answered with problem+json."""


def _call(client: httpx.Client, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None) -> Any:
    try:
        r = client.request(method, path, json=body, params={k: v for k, v in (params or {}).items() if v is not None})
    except httpx.HTTPError as exc:
        raise ServiceProblem(f"cannot reach the service: {type(exc).__name__}") from None
    if r.status_code >= 400:
        try:
            detail = r.json().get("detail", r.text[:300])
        except ValueError:
            detail = r.text[:300]
        raise ServiceProblem(f"{r.status_code} {detail}")
    return r.json()


def _memories(c: httpx.Client, args: Any) -> Any:
    """list / get / edit / history over HTTP: the service's JSON as it answered it."""
    memory = quote(getattr(args, "memory_id", "") or "", safe="")
    if args.command == "list":
        return _call(c, "GET", "/api/v1/memories", params={"scope": args.scope, "cursor": args.cursor, "limit": args.limit, "status": args.status})
    if args.command == "history":
        return _call(c, "GET", f"/api/v1/memories/{memory}/history", params={"scope": args.scope, "limit": args.limit})
    if args.command == "get":
        return _call(c, "GET", f"/api/v1/memories/{memory}", params={"scope": args.scope})
    fields = edit_fields(args)  # checked before any call
    scope = args.scope or _call(c, "GET", f"/api/v1/memories/{memory}")["scope"]
    return _call(c, "PATCH", f"/api/v1/memories/{memory}", params={"scope": scope}, body=fields)


def run_client(args: Any, out: Any = None) -> int:
    out = sys.stdout if out is None else out  # resolved per call: a stream bound at import outlives redirections
    if bool(args.api_key) == bool(args.token):
        raise InvalidInput("client mode needs exactly one of --api-key or --token (or VIKING_BRIDGE_API_KEY / VIKING_BRIDGE_TOKEN in the environment)")
    auth = {"X-API-Key": args.api_key} if args.api_key else {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.url.rstrip("/"), headers=auth, timeout=60) as c:
        cmd = args.command
        if cmd == "remember":
            body = {"content": read_content(args.content), "kind": args.kind, "visibility": args.visibility, "department_id": args.department, "idempotency_key": args.idempotency_key,
                    "ttl_s": getattr(args, "ttl", None)}
            r = _call(c, "POST", "/api/v1/memories", body={k: v for k, v in body.items() if v is not None})
            print(f"{r['status']} {r['scope']} {r['memory_id']} ({r['reason']}{', deduplicated' if r['deduplicated'] else ''})", file=out)
        elif cmd == "recall":
            r = _call(c, "POST", "/api/v1/recall", body={"query": args.query, "purpose": args.purpose, "budget_tokens": args.budget, "manifest_id": getattr(args, "manifest", None)})
            print(dump_json(r) if args.json else r["context"], file=out)
        elif cmd in ("list", "get", "edit", "history"):
            print(dump_json(_memories(c, args)), file=out)
        elif cmd == "forget":
            if args.subject:
                print(f"forgot {_call(c, 'POST', '/api/v1/forget-subject', body={'subject_user_id': args.subject})['count']} memories of {args.subject}", file=out)
            else:
                if not (args.scope and args.memory_id):
                    raise InvalidInput("forget needs SCOPE and MEMORY_ID, or --subject USER")
                print("forgotten" if _call(c, "DELETE", f"/api/v1/memories/{args.memory_id}", params={"scope": args.scope})["deleted"] else "no such memory in that scope", file=out)
        elif cmd == "audit":
            for e in _call(c, "GET", "/api/v1/audit", params={"action": args.action, "limit": args.limit}):
                print(json.dumps({k: e[k] for k in ("seq", "ts", "actor", "action", "memory_ids", "scopes", "grant_ids")}, ensure_ascii=False), file=out)
        elif cmd == "purge-expired":
            total = 0
            while True:
                r = _call(c, "POST", "/api/v1/purge-expired", params={"max_deletions": args.batch})
                total += r["purged"]
                print(f"purged {total} expired memories of {r['tenant_id']} so far{'' if r['complete'] else ', continuing'}", file=out, flush=True)
                if r["complete"]:
                    break
        elif cmd == "approve":
            r = _call(c, "POST", f"/api/v1/memories/{args.memory_id}/approve", params={"scope": args.scope})
            print(f"{r['status']} {r['scope']} {r['memory_id']}", file=out)
        elif cmd == "grant":
            r = _call(c, "POST", "/api/v1/grants", body={"grantee_user_id": args.grantee, "scope": args.scope, "ttl_seconds": args.ttl, "reason": args.reason, "grantee_agent_id": args.agent})
            print(f"grant {r['grant_id']} lets {r['grantee_user_id']} read {r['scope']} until {r['expires_at']:.0f}", file=out)
        elif cmd == "inject":
            r = _call(c, "GET", "/api/v1/inject-context", params={"agent_id": args.child, "task": args.task, "depth": args.depth})
            print(json.dumps(r, indent=2, ensure_ascii=False) if args.json else f"manifest {r['manifest_id']} ({r['source']})\n{r['context']}", file=out)
        else:
            raise InvalidInput(f"{cmd} is not available in client mode")
    return 0
