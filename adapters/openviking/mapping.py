"""ScopeKey -> OpenViking principal (account, user, peer) and the only URIs the adapter builds.

Never decides who may see what: it maps a place to a place, injectively, and refuses anything
that could escape its place.

OpenViking names must match `^[a-zA-Z0-9_.@-]+$`, be <= 255 chars, contain at most one `@`,
and an account may not start with `_`. Our ids (see `identity.ids`) may contain unicode and
`% * + = ~`, so every id is encoded as

    <kind prefix>-<readable ascii, <= 24 chars>-<first 20 hex of sha256(kind NUL id)>

e.g. tenant `acme` -> account `vb-acme-3f1c…`, user `zoë%1` -> user `u-zo_1-9a0e…`. The readable
part is for humans only; the hash (80 bits, keyed by the id's *kind*) makes the mapping
injective in practice and keeps `john_doe` and `john-doe` (same readable part) apart.

    ScopeKey                      account                 user                peer
    global                        <ns>.global             global-shared        -
    acme/tenant                   <ns>-acme-<h>           tenant-shared        -
    acme/user/u17                 <ns>-acme-<h>           u-u17-<h>            -
    acme/agent/coder/u17          <ns>-acme-<h>           u-u17-<h>            a-coder-<h>
    acme/ws/alpha                 <ns>-acme-<h>           ws-alpha-<h>         -
    acme/dept/eng                 <ns>-acme-<h>           dept-eng-<h>         -
    acme/team/red                 <ns>-acme-<h>           team-red-<h>         -
    acme/task/coder/u17/t9        <ns>-acme-<h>           u-u17-<h>            k-t9-<h of agent, task>

Memory files: `viking://user/<user>/memories/vb/<memory id>.md`, or for an agent (or task)
scope `viking://user/<user>/peers/<peer>/memories/vb/<memory id>.md`. A task scope is a peer of
its own inside the user (hashed over agent and task, so neither another task nor the agent's
own scope shares its directory), which keeps erasure of the user's tree complete. Memory ids are
`adapters.shared.envelope.memory_id_for(scope, idempotency key)` (`m` + 32 hex, the same for every
remote adapter), so a retried put lands on the same file.
Every URI segment is re-validated against the OpenViking grammar right before the URI is built;
`.`/`..`, slashes and anything else are rejected with `InvalidRequest` before any request.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

from adapters.shared.envelope import MEMORY_ID, memory_id_for
from adapters.errors import InvalidRequest
from adapters.scopes import ScopeKey, Visibility
from identity.ids import InvalidIdError, validate_id

__all__ = ["OV_NAME", "validate_ov_name", "encode_id", "Principal", "ScopeMapper", "memory_id_for", "MEMORY_ID",
           "ADMIN_USER", "TENANT_USER", "GLOBAL_USER", "MEMORY_DIR"]

OV_NAME = re.compile(r"^[a-zA-Z0-9_.@-]+\Z")
_NAMESPACE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9-]{0,39}\Z")
ADMIN_USER = "vb-admin"  # created with each account; its key is discarded, never used for data
TENANT_USER = "tenant-shared"
GLOBAL_USER = "global-shared"
MEMORY_DIR = "vb"
_HASH_HEX = 20
_READABLE = 24


def validate_ov_name(name: object, what: str, *, account: bool = False) -> str:
    """Raise InvalidRequest unless `name` is a safe OpenViking id (and a safe URI segment)."""
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"OpenViking {what} must be a non-empty string")
    if len(name) > 255 or not OV_NAME.match(name) or name.count("@") > 1 or name in (".", "..") or ".." in name:
        raise InvalidRequest(f"OpenViking {what} {name[:40]!r} is not a valid OpenViking id")
    if account and name.startswith("_"):
        raise InvalidRequest(f"OpenViking account {name[:40]!r} may not start with '_'")
    return name


def _readable(value: str) -> str:
    ascii_ = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", ascii_).strip("_")
    return cleaned[:_READABLE] or "x"


def encode_id(kind: str, value: str, field: str) -> str:
    """`<kind>-<readable>-<hash>` for one of our ids; raises InvalidRequest for a bad id."""
    try:
        validate_id(value, field)
    except InvalidIdError as exc:
        raise InvalidRequest(str(exc)) from None
    digest = hashlib.sha256(f"{kind}\x00{value}".encode()).hexdigest()[:_HASH_HEX]
    return f"{kind}-{_readable(value)}-{digest}"


def task_peer(agent_id: str, task_id: str) -> str:
    """`k-<readable task>-<hash of (agent, task)>`: one peer per task of one agent; raises
    InvalidRequest for a bad id. Cannot equal an agent peer (`a-...`)."""
    for value, what in ((agent_id, "agent id"), (task_id, "task id")):
        try:
            validate_id(value, what)
        except InvalidIdError as exc:
            raise InvalidRequest(str(exc)) from None
    digest = hashlib.sha256(f"task\x00{agent_id}\x00{task_id}".encode()).hexdigest()[:_HASH_HEX]
    return f"k-{_readable(task_id)}-{digest}"


def check_memory_id(memory_id: object) -> str:
    if not isinstance(memory_id, str) or not MEMORY_ID.match(memory_id):
        raise InvalidRequest(f"not an OpenViking-adapter memory id: {str(memory_id)[:40]!r}")
    return memory_id


@dataclass(frozen=True)
class Principal:
    """Where one ScopeKey lives on the server."""

    scope: ScopeKey
    account: str
    user: str
    peer: str | None = None

    def __post_init__(self) -> None:
        validate_ov_name(self.account, "account", account=True)
        validate_ov_name(self.user, "user")
        if self.peer is not None:
            validate_ov_name(self.peer, "peer")

    @property
    def user_root(self) -> str:
        return f"viking://user/{validate_ov_name(self.user, 'user')}"

    @property
    def memory_dir(self) -> str:
        if self.peer is not None:
            return f"{self.user_root}/peers/{validate_ov_name(self.peer, 'peer')}/memories/{MEMORY_DIR}"
        return f"{self.user_root}/memories/{MEMORY_DIR}"

    def memory_uri(self, memory_id: str) -> str:
        return f"{self.memory_dir}/{check_memory_id(memory_id)}.md"

    def memory_id_of(self, uri: object) -> str | None:
        """The memory id if `uri` is exactly one of this principal's memory files, else None."""
        if not isinstance(uri, str):
            return None
        prefix = self.memory_dir + "/"
        if not uri.startswith(prefix) or not uri.endswith(".md"):
            return None
        candidate = uri[len(prefix):-3]
        return candidate if MEMORY_ID.match(candidate) else None


class ScopeMapper:
    """Maps ScopeKeys to principals under one namespace (`vb` by default; tests use a fresh one)."""

    def __init__(self, namespace: str = "vb") -> None:
        if not _NAMESPACE.match(namespace):
            raise InvalidRequest(f"namespace {namespace!r} must match {_NAMESPACE.pattern}")
        self.namespace = namespace

    def account_for_tenant(self, tenant_id: str) -> str:
        digest = encode_id("tenant", tenant_id, "tenant_id").rsplit("-", 1)[1]
        return validate_ov_name(f"{self.namespace}-{_readable(tenant_id)}-{digest}", "account", account=True)

    @property
    def global_account(self) -> str:
        return validate_ov_name(f"{self.namespace}.global", "account", account=True)

    def principal(self, scope: object) -> Principal:
        if not isinstance(scope, ScopeKey):
            raise InvalidRequest(f"expected a ScopeKey, got {type(scope).__name__}")
        v = scope.visibility
        if v is Visibility.GLOBAL:
            if scope.tenant_id is not None or scope.owner_id is not None or scope.user_id is not None:
                raise InvalidRequest("the global scope has no owner")
            return Principal(scope, self.global_account, GLOBAL_USER)
        account = self.account_for_tenant(scope.tenant_id)  # type: ignore[arg-type]
        if v is Visibility.TENANT:
            return Principal(scope, account, TENANT_USER)
        if v is Visibility.PRIVATE:
            return Principal(scope, account, encode_id("u", scope.owner_id, "user id"))  # type: ignore[arg-type]
        if v is Visibility.AGENT:
            return Principal(scope, account, encode_id("u", scope.user_id, "user id"),  # type: ignore[arg-type]
                             encode_id("a", scope.owner_id, "agent id"))  # type: ignore[arg-type]
        if v is Visibility.WORKSPACE:
            return Principal(scope, account, encode_id("ws", scope.owner_id, "workspace id"))  # type: ignore[arg-type]
        if v is Visibility.DEPARTMENT:
            return Principal(scope, account, encode_id("dept", scope.owner_id, "department id"))  # type: ignore[arg-type]
        if v is Visibility.TEAM:
            return Principal(scope, account, encode_id("team", scope.owner_id, "team id"))  # type: ignore[arg-type]
        if v is Visibility.TASK:
            return Principal(scope, account, encode_id("u", scope.user_id, "user id"), task_peer(scope.owner_id, scope.task_id))  # type: ignore[arg-type]
        raise InvalidRequest(f"unknown visibility {v!r}")
