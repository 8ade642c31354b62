"""ScopeKey <-> Viking principal and session ids, and the framing of the record envelope.

Memory ids and the envelope itself are shared by every remote adapter (`adapters.shared.envelope`):
ids are `m` + 32 hex of (scope, idempotency key), sent as the event's `group_id`; the envelope
travels as JSON in `memory_info.vb_record` next to `summary` (what the service embeds).

Never decides who may see what: it only names places. Our ids may hold unicode letters and
`_ - . @ % * + = ~`; Viking ids are (at most, we assume the strictest reading) `[A-Za-z0-9_]`,
starting with a letter, <= 128 chars. So every name we send is

    <prefix><tag>_<readable>_<h32>

where `tag` says what the name is (u private, a agent-owned, w workspace, d department, t tenant
shared, g global, tm team, k task, r the tenant's registry, ag an agent as assistant), `readable` is an ASCII
hint for humans in the console (letters/digits of the owner id, <= 20 chars, possibly empty) and
`h32` is 32 hex chars (128 bits) of SHA-256 over the *full* ScopeKey string, with a domain tag.
The readable part is decoration; the hash carries identity, so `john_doe` / `john-doe` / `johndoe`
and `foo` / `foobar` get unrelated principals. The map is not reversible: the adapter maps a
hit's principal back through the table of the scopes it queried (and cross-checks the scope
string stored in the record), so a principal outside that table can never be attributed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping

from adapters.base import NewMemory, Provenance, StoredMemory
from adapters.shared.envelope import dump_envelope, from_envelope, load_envelope, memory_id_for, to_envelope
from adapters.errors import BackendMisconfigured, BackendConflict
from adapters.scopes import ScopeKey, Visibility

__all__ = [
    "VIKING_ID",
    "PrincipalMap",
    "principal_for",
    "assistant_principal",
    "registry_principal",
    "memory_id_for",
    "backend_session_id",
    "encode_record",
    "decode_record",
    "prov_from_json",
    "RECORD_FIELD",
]


def prov_from_json(d: Mapping[str, Any]) -> Provenance:
    """Provenance of a registry capture record (`Provenance.from_dict`)."""
    return Provenance.from_dict(d)

VIKING_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}\Z")
_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,15}\Z")
_TAG = {
    Visibility.PRIVATE: "u",
    Visibility.AGENT: "a",
    Visibility.WORKSPACE: "w",
    Visibility.DEPARTMENT: "d",
    Visibility.TENANT: "t",
    Visibility.GLOBAL: "g",
    Visibility.TEAM: "tm",  # a team of agents
    Visibility.TASK: "k",  # one agent's working memory in one task (readable = the agent id)
}
RECORD_FIELD = "vb_record"  # memory_info key holding our record envelope (a JSON string)


def _h(domain: str, text: str, n: int = 32) -> str:
    return hashlib.sha256(f"viking-bridge/{domain}\x00{text}".encode("utf-8")).hexdigest()[:n]


def _readable(text: str | None) -> str:
    return "".join(ch for ch in (text or "") if ch.isascii() and ch.isalnum())[:20]


def check_prefix(prefix: str) -> str:
    if not _PREFIX.match(prefix):
        raise BackendMisconfigured(f"principal prefix must match {_PREFIX.pattern}, got {prefix!r}", backend="viking")
    return prefix


def principal_for(scope: ScopeKey, prefix: str = "vb") -> str:
    """The Viking user_id that holds exactly the memories of `scope` (see module docstring)."""
    readable = _readable(scope.owner_id if scope.visibility is not Visibility.TENANT else scope.tenant_id)
    name = f"{check_prefix(prefix)}{_TAG[scope.visibility]}_{readable}_{_h('scope', str(scope))}"
    assert VIKING_ID.match(name), name
    return name


def assistant_principal(tenant_id: str | None, agent_id: str, prefix: str = "vb") -> str:
    """The Viking assistant_id for an agent of a tenant (informational: never used to filter)."""
    digest = _h("agent", (tenant_id or "") + "/" + agent_id)
    return f"{check_prefix(prefix)}ag_{_readable(agent_id)}_{digest}"


def registry_principal(tenant_id: str | None, prefix: str = "vb") -> str:
    """Where the adapter records which scopes of a tenant exist and who captured which session."""
    return f"{check_prefix(prefix)}r_{_readable(tenant_id)}_{_h('registry', tenant_id or '')}"


def scope_marker_id(scope: ScopeKey) -> str:
    return "vs" + _h("marker", str(scope))


def backend_session_id(scope: ScopeKey, session_key: str, prefix: str = "vb") -> str:
    """`[A-Za-z0-9_]`, starts with a letter, <= 128: `<prefix>s_<64 hex>` of (scope, session_key).

    The bridge's session_key is already bound to the identity fingerprint; hashing it together with
    the scope means two identities (or one identity capturing into two scopes) never share a
    backend session, so session/add's overwrite-on-reuse can only ever replace its own session."""
    digest = hashlib.sha256(f"viking-bridge/session\x00{scope}\x00{session_key}".encode("utf-8")).hexdigest()
    return f"{check_prefix(prefix)}s_{digest}"


class PrincipalMap:
    """principal -> ScopeKey for the scopes of ONE request; refuses a collision outright."""

    def __init__(self, scopes: "list[ScopeKey] | tuple[ScopeKey, ...]", prefix: str) -> None:
        self._by_principal: dict[str, ScopeKey] = {}
        for scope in scopes:
            p = principal_for(scope, prefix)
            other = self._by_principal.get(p)
            if other is not None and other != scope:
                raise BackendConflict(f"principal collision between {other} and {scope}", backend="viking")
            self._by_principal[p] = scope

    def scope_of(self, principal: str) -> ScopeKey | None:
        return self._by_principal.get(principal)

    @property
    def principals(self) -> list[str]:
        return list(self._by_principal)


# -- record framing (the envelope itself is `adapters.shared.envelope`) ----------------------------
def encode_record(memory: StoredMemory) -> dict[str, Any]:
    """memory_info for an event: `summary` (what the service embeds) + the envelope as JSON."""
    return {"summary": memory.content, RECORD_FIELD: dump_envelope(to_envelope(memory))}


def encode_new(memory_id: str, scope: ScopeKey, new: NewMemory, now: float) -> tuple[StoredMemory, dict[str, Any]]:
    stored = StoredMemory.from_new(memory_id, scope, new, now=now)
    return stored, encode_record(stored)


def decode_record(memory_info: Mapping[str, Any], scope: ScopeKey, memory_id: str | None = None) -> StoredMemory:
    """Our record from memory_info; `CorruptRecord` when it is absent, malformed or names another
    scope (or id) than the place it was read from. Callers drop it and raise an alarm.

    `scope` is where the hit was *read from* (established from its principal)."""
    return from_envelope(load_envelope(memory_info.get(RECORD_FIELD)), scope=scope, memory_id=memory_id, content=memory_info.get("summary"))
