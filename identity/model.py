"""`MemoryIdentity`: who is asking, as established by a credential and nothing else.

An identity is built only by an `IdentityProvider` from a verified credential (or, in dev mode,
from the development environment). No request body, metadata key, prompt or memory content may
construct or alter one: the bridge takes an identity as an argument and never parses one out of
user input. A request may *narrow* its identity (pick a session id) but never widen it.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, field_validator

from identity.errors import InvalidIdentityInput
from identity.ids import validate_id

__all__ = ["MemoryIdentity", "Id"]


def _id(value: str) -> str:
    return validate_id(value)


Id = Annotated[str, AfterValidator(_id)]


@lru_cache(maxsize=65536)
def _fingerprint(
    tenant_id: str,
    user_id: str,
    department_ids: frozenset[str],
    workspace_id: str | None,
    agent_id: str,
    roles: frozenset[str],
    permission_version: str | None,
    task_id: str | None = None,
) -> str:
    canonical = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "department_ids": sorted(department_ids),
        "workspace_id": workspace_id,
        "agent_id": agent_id,
        "roles": sorted(roles),
        "permission_version": permission_version,
    }
    if task_id is not None:  # only when set: fingerprints of task-less identities stay as they were
        canonical["task_id"] = task_id
    blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class MemoryIdentity(BaseModel):
    """The authenticated caller. Frozen, hashable, validated; `fingerprint` is stable."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)

    tenant_id: Id
    user_id: Id
    department_ids: frozenset[Id] = frozenset()
    workspace_id: Id | None = None
    agent_id: Id
    session_id: Id
    roles: frozenset[Id] = frozenset()
    permission_version: Id | None = None
    #: Seed 000 isolation level 3: the task this credential acts in. Set only by a provider from
    #: the credential (a JWT claim, a signed gateway header, the dev environment); with it the
    #: agent's working memory lives in `acme/task/<agent>/<user>/<task>`, unseen by other tasks.
    task_id: Id | None = None

    def __init__(self, **data: Any) -> None:
        """Validation failures are `InvalidIdentityInput` (a member of the error tree, and still a
        `ValueError`), naming each bad field and its rule — never a bare pydantic error."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in err['loc']) or 'identity'}: {err['msg']}" for err in exc.errors()
            )
            raise InvalidIdentityInput(f"invalid identity: {problems}") from None

    @field_validator("department_ids", "roles", mode="before")
    @classmethod
    def _set_from_sequence(cls, value: object) -> object:
        if isinstance(value, str):
            raise InvalidIdentityInput("must be a list of ids, not a single string")
        return value

    @property
    def fingerprint(self) -> str:
        """Hex SHA-256 of everything that decides access — i.e. all fields but `session_id`.

        Sessions bind to this value: a fork keeps it, a different user or agent changes it.
        Memoised on the field values themselves (never on the instance, which `model_copy`
        would carry over to a copy with other roles).
        """
        return _fingerprint(
            self.tenant_id, self.user_id, self.department_ids, self.workspace_id, self.agent_id, self.roles, self.permission_version,
            self.task_id,
        )

    @property
    def principal(self) -> str:
        """`tenant/user@agent`, for logs and rendered labels (ids cannot contain `/` or spaces)."""
        return f"{self.tenant_id}/{self.user_id}@{self.agent_id}"

    def has_role(self, role: str) -> bool:
        return role in self.roles

    def with_session(self, session_id: str) -> "MemoryIdentity":
        """Narrow to another session id; everything that decides access stays the same."""
        return self.model_copy(update={"session_id": validate_id(session_id, "session_id")})

    def __repr__(self) -> str:  # short, and safe to log
        task = f", task={self.task_id}" if self.task_id is not None else ""
        return f"MemoryIdentity({self.principal}{task}, session={self.session_id}, fp={self.fingerprint[:12]})"

    __str__ = __repr__
