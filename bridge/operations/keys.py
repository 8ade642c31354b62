"""API-key management for a tenant admin: list, issue and revoke the keys of the caller's own tenant.

The key store is the one the service authenticates API keys with (`BridgeRuntime.api_keys`);
the tenant of every key is the admin's, from the credential, never a field. A key is bound to a
fixed identity (user, agent, departments, workspace, roles) and only roles the policy knows may
be named. Permissions are `bridge/policy/keys.py`'s, the handlers `bridge/handlers/keys.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.errors import InvalidInput
from bridge.operations.base import Operation, _set
from bridge.operations.fields import flag, ident, optional_ident, shown
from bridge.policy.config import Role

__all__ = ["ListApiKeys", "IssueApiKey", "RevokeApiKey"]

_KEY_ID_HEX = 16
_MAX_IDS = 64


def _ids(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, frozenset, set)) or len(values) > _MAX_IDS:
        raise InvalidInput(f"{what} must be a list of at most {_MAX_IDS} ids")
    return tuple(sorted({ident(v, what) for v in values}))


@dataclass(frozen=True, slots=True, kw_only=True)
class ListApiKeys(Operation):
    """The API keys of the caller's tenant (ids and bindings, never a secret), newest first."""

    include_revoked: bool = False

    def __post_init__(self) -> None:
        _set(self, "include_revoked", flag(self.include_revoked, "include_revoked"))


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueApiKey(Operation):
    """A new key of the caller's tenant bound to this identity; the answer holds the only copy of the secret."""

    user_id: str
    agent_id: str = "assistant"
    department_ids: tuple[str, ...] = ()
    workspace_id: str | None = None
    roles: tuple[str, ...] = ()
    label: str = ""

    def __post_init__(self) -> None:
        _set(self, "user_id", ident(self.user_id, "user_id"))
        _set(self, "agent_id", ident(self.agent_id, "agent_id"))
        _set(self, "department_ids", _ids(self.department_ids, "department_ids"))
        _set(self, "workspace_id", optional_ident(self.workspace_id, "workspace_id"))
        _set(self, "roles", _ids(self.roles, "roles"))
        known = {r.value for r in Role}
        unknown = [r for r in self.roles if r not in known]
        if unknown:
            raise InvalidInput(f"unknown role {shown(unknown[0])}; the roles are: {', '.join(sorted(known))}")
        if not isinstance(self.label, str) or len(self.label) > 200 or not self.label.isprintable():
            raise InvalidInput("label must be printable text of at most 200 characters")


@dataclass(frozen=True, slots=True, kw_only=True)
class RevokeApiKey(Operation):
    """Revoke one key of the caller's tenant by its id (the 16 hex characters after `vbk_`)."""

    key_id: str

    def __post_init__(self) -> None:
        if isinstance(self.key_id, str) and self.key_id.startswith("vbk_"):
            # never echoed: a whole key in an error message would put its secret in logs and screens
            raise InvalidInput(f"that is a whole API key; pass only its id, the {_KEY_ID_HEX} hex characters after vbk_")
        if not isinstance(self.key_id, str) or len(self.key_id) != _KEY_ID_HEX or any(c not in "0123456789abcdef" for c in self.key_id):
            raise InvalidInput(f"a key id is {_KEY_ID_HEX} lowercase hex characters (the part after vbk_)")
