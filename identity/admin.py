"""Admin command for API keys: `python -m identity.admin --db PATH {issue,revoke,list} ...`.

Why a separate command: keys are issued by an operator, never by the bridge's request path. The
plaintext key is printed exactly once, by `issue`; `list` shows key ids and bindings only.
(The `viking-bridge` console script may mount `main` as a sub-command.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Collection, Sequence
from datetime import datetime, timezone

from identity.errors import InvalidIdentityInput, VikingBridgeError
from identity.ids import InvalidIdError
from identity.providers.api_keys import API_KEY_PREFIX, ApiKeyRecord, ApiKeyStore

DB_ENV = "VIKING_BRIDGE_API_KEYS__DB_PATH"
STATE_URL_ENV = "VIKING_BRIDGE_STATE_URL"  # shared state on PostgreSQL: keys live there for every replica
STATE_SCHEMA_ENV = "VIKING_BRIDGE_STATE_SCHEMA"


def _open_store(db: str | None) -> ApiKeyStore | None:
    """The key store the service reads: PostgreSQL when the state is shared, else the SQLite file."""
    url = os.environ.get(STATE_URL_ENV)
    if url and not db:
        from identity.state.postgres import PgApiKeyRepository
        from identity.storage.postgres import PgPool

        schema = os.environ.get(STATE_SCHEMA_ENV) or "viking_bridge"
        return ApiKeyStore(PgApiKeyRepository(PgPool(url, schema=schema, max_size=1), owns_pool=True))
    return ApiKeyStore(db) if db else None


def _parser(roles: Collection[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m identity.admin", description="Manage viking-bridge API keys.")
    parser.add_argument("--db", default=os.environ.get(DB_ENV), help=f"SQLite key store (default ${DB_ENV}; with ${STATE_URL_ENV} set and no --db: the shared PostgreSQL state)")
    sub = parser.add_subparsers(dest="command", required=True)

    issue = sub.add_parser("issue", help="issue a key bound to one identity; prints the key once")
    issue.add_argument("--tenant", required=True)
    issue.add_argument("--user", required=True)
    issue.add_argument("--agent", required=True)
    issue.add_argument("--department", action="append", default=[], help="repeatable")
    issue.add_argument("--workspace")
    issue.add_argument(
        "--role", action="append", default=[], choices=sorted(roles) if roles is not None else None,
        help="repeatable; " + (f"the roles the policy knows: {', '.join(sorted(roles))}" if roles is not None else "any role id"),
    )
    issue.add_argument("--permission-version")
    issue.add_argument("--label", default="")

    revoke = sub.add_parser("revoke", help="revoke a key by its key id (the 16 hex characters `list` shows)")
    revoke.add_argument("key_id")

    listing = sub.add_parser("list", help="list keys (never secrets)")
    listing.add_argument("--tenant")
    return parser


def _describe(record: ApiKeyRecord) -> dict[str, object]:
    return {
        "key_id": record.key_id,
        "tenant_id": record.tenant_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "department_ids": sorted(record.department_ids),
        "workspace_id": record.workspace_id,
        "roles": sorted(record.roles),
        "permission_version": record.permission_version,
        "label": record.label,
        "revoked": record.revoked,
        "created_at": _when(record.created_at),
        "last_used_at": _when(record.last_used_at),
        "revoked_at": _when(record.revoked_at),
    }


def _when(ts: float | None) -> str | None:
    """An epoch time as ISO 8601 UTC, to the second (None stays None: never used, not revoked)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def _revoke_target(given: str) -> str:
    """The key id to revoke. A whole key (`vbk_<key_id>_<secret>`) is refused rather than
    used: it should not have been pasted into a shell, and the message says so without echoing it."""
    if given.startswith(f"{API_KEY_PREFIX}_"):
        raise InvalidIdentityInput(
            "that is a whole API key, not a key id: revoke it by its key id (the 16 hex characters after "
            f"'{API_KEY_PREFIX}_', as `keys list` shows) — and treat the key as exposed"
        )
    return given


def main(argv: Sequence[str] | None = None, *, roles: Collection[str] | None = None) -> int:
    """`roles`: the roles an issued key may carry (the `viking-bridge keys` door passes the
    policy's; this package knows no policy). Every error is one line on stderr, exit 2."""
    args = _parser(roles).parse_args(argv)
    store = _open_store(args.db)
    if store is None:
        print(f"error: no key store; pass --db or set {DB_ENV} (or {STATE_URL_ENV} for shared state)", file=sys.stderr)
        return 2
    try:
        if args.command == "issue":
            try:
                issued = store.issue(
                    tenant_id=args.tenant,
                    user_id=args.user,
                    agent_id=args.agent,
                    department_ids=args.department,
                    workspace_id=args.workspace,
                    roles=args.role,
                    permission_version=args.permission_version,
                    label=args.label,
                )
            except InvalidIdError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            print(json.dumps(_describe(issued.record), ensure_ascii=False), file=sys.stderr)
            print("The key below is shown once and is not stored; keep it now.", file=sys.stderr)
            print(issued.key)
            return 0
        if args.command == "revoke":
            key_id = _revoke_target(args.key_id)
            if store.revoke(key_id):
                print(f"revoked {key_id}")
                return 0
            print(f"error: no active key {key_id}", file=sys.stderr)
            return 1
        for record in store.records(tenant_id=args.tenant):
            print(json.dumps(_describe(record), ensure_ascii=False))
        return 0
    except VikingBridgeError as exc:  # the one error tree (a bad key id, a storage problem): one line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
