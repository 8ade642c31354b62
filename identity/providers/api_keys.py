"""Bridge-issued API keys, each bound to one identity, stored only as salted hashes.

Why: service accounts and agents without an OIDC client still need a credential that names
*who* they are. An admin issues a key for a fixed identity (tenant, user, departments,
workspace, roles, agent); whoever presents the key *is* that identity and cannot choose another.

Key format: `vbk_<key_id>_<secret>` — `key_id` is 16 hex chars (the lookup handle, safe to log),
`secret` is 32 random bytes, url-safe base64. The store keeps `key_id`, a random salt and
HMAC-SHA256(salt, secret); the plaintext key exists only in the return value of `issue`.

Why HMAC-SHA256 and not scrypt: the secret has 256 bits of entropy, so there is nothing for a
slow KDF to protect (slow hashes defend low-entropy passwords) — and a deliberately slow hash on
every request would hand attackers a cheap CPU-exhaustion lever. The `scheme` column allows a
future migration. Comparison uses `hmac.compare_digest`; an unknown key_id costs the same hash.

What it must never do: store or log the plaintext key, or accept a revoked one.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from identity.state.memory import InMemoryApiKeyRepository
from identity.state.sqlite import SqliteApiKeyRepository
from identity.errors import InvalidCredential, InvalidIdentityInput
from identity.ids import validate_id
from identity.model import MemoryIdentity
from identity.providers.base import ApiKey, new_session_id, require_credential
from identity.state.protocols import ApiKeyRecord, ApiKeyRepository, StoredApiKey

log = logging.getLogger(__name__)

__all__ = [
    "API_KEY_PREFIX",
    "ApiKeyProvider",
    "ApiKeyRecord",
    "ApiKeyStore",
    "InMemoryApiKeyRepository",
    "IssuedApiKey",
    "SqliteApiKeyRepository",
]

API_KEY_PREFIX = "vbk"
_SCHEME = "hmac-sha256"
_KEY_ID_HEX = 16
_MAX_KEY_LENGTH = 256
_TOUCH_EVERY_S = 60.0
_SECRET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True)
class IssuedApiKey:
    """Returned once by `issue`. `key` is the only copy of the plaintext; show it, then drop it."""

    key: str = field(repr=False)
    record: ApiKeyRecord


def _digest(salt: bytes, secret: str) -> bytes:
    """HMAC-SHA256 of the secret, keyed with the salt (the one-shot `hmac.digest`: the same bytes
    as `hmac.new(...).digest()` without an HMAC object per call)."""
    return hmac.digest(salt, secret.encode("ascii"), "sha256")


#: The constant-time comparison; a module attribute so tests can count calls to it.
_compare = hmac.compare_digest


def parse_api_key(key: object) -> tuple[str, str]:
    """Split `vbk_<key_id>_<secret>`; anything else (wrong type, surrogates, wrong alphabet) is
    an `InvalidCredential`. The secret alphabet is url-safe base64, so it always encodes."""
    if not isinstance(key, str) or len(key) > _MAX_KEY_LENGTH:
        raise InvalidCredential("malformed API key")
    prefix, _, rest = key.partition("_")
    key_id, _, secret = rest.partition("_")
    if (
        prefix != API_KEY_PREFIX
        or len(key_id) != _KEY_ID_HEX
        or any(c not in "0123456789abcdef" for c in key_id)
        or not secret
        or not _SECRET_CHARS.issuperset(secret)
    ):
        raise InvalidCredential("malformed API key (expected vbk_<key_id>_<secret>)")
    return key_id, secret


class ApiKeyStore:
    """Issues, revokes and verifies API keys over an `ApiKeyRepository` (SQLite for a path).

    `issue` and `revoke` are the admin operations (see `python -m identity.admin`); `verify` is
    the hot path used by `ApiKeyProvider`.

    No existence oracle: an unknown key id is checked against a dummy
    verifier computed once at start-up, so it costs exactly what a known id with a wrong secret
    costs — one repository lookup, one HMAC, one constant-time comparison — and fails with the
    same message.
    """

    def __init__(self, source: str | Path | ApiKeyRepository) -> None:
        if isinstance(source, (str, Path)):
            self.path: Path | None = Path(source)
            self.repository: ApiKeyRepository = SqliteApiKeyRepository(self.path)
        else:
            self.path = getattr(source, "path", None)
            self.repository = source
        salt = secrets.token_bytes(16)
        self._dummy = StoredApiKey(
            record=ApiKeyRecord("0" * _KEY_ID_HEX, "-", "-", frozenset(), None, "-", frozenset(), None, "", 0.0, None),
            scheme=_SCHEME,
            salt=salt,
            digest=_digest(salt, secrets.token_urlsafe(32)),
        )
        self._touched: dict[str, float] = {}

    @classmethod
    def in_memory(cls) -> "ApiKeyStore":
        return cls(InMemoryApiKeyRepository())

    def close(self) -> None:
        self.repository.close()

    # ------------------------------------------------------------------ admin
    def issue(
        self,
        *,
        tenant_id: str,
        user_id: str,
        agent_id: str,
        department_ids: Iterable[str] = (),
        workspace_id: str | None = None,
        roles: Iterable[str] = (),
        permission_version: str | None = None,
        label: str = "",
    ) -> IssuedApiKey:
        """Create a key bound to this identity. Ids are validated here, at issue time."""
        departments = frozenset(validate_id(d, "department_id") for d in _id_list(department_ids, "department_ids"))
        role_set = frozenset(validate_id(r, "role") for r in _id_list(roles, "roles"))
        validate_id(tenant_id, "tenant_id")
        validate_id(user_id, "user_id")
        validate_id(agent_id, "agent_id")
        if workspace_id is not None:
            validate_id(workspace_id, "workspace_id")
        if permission_version is not None:
            validate_id(permission_version, "permission_version")
        label = _label(label)
        key_id = secrets.token_hex(_KEY_ID_HEX // 2)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_bytes(16)
        record = ApiKeyRecord(
            key_id=key_id,
            tenant_id=tenant_id,
            user_id=user_id,
            department_ids=departments,
            workspace_id=workspace_id,
            agent_id=agent_id,
            roles=role_set,
            permission_version=permission_version,
            label=label,
            created_at=time.time(),
            revoked_at=None,
        )
        self.repository.insert(StoredApiKey(record=record, scheme=_SCHEME, salt=salt, digest=_digest(salt, secret)))
        return IssuedApiKey(key=f"{API_KEY_PREFIX}_{key_id}_{secret}", record=record)

    def revoke(self, key_id: str) -> bool:
        """Revoke a key; True if it existed and was active. Revocation is immediate and final."""
        return self.repository.revoke(_key_id(key_id), time.time())

    def get(self, key_id: str) -> ApiKeyRecord | None:
        stored = self.repository.lookup(_key_id(key_id))
        return stored.record if stored else None

    def records(self, *, tenant_id: str | None = None) -> list[ApiKeyRecord]:
        if tenant_id is not None:
            validate_id(tenant_id, "tenant_id")
        return list(self.repository.records(tenant_id))

    # ------------------------------------------------------------------ hot path
    def verify(self, key: str) -> ApiKeyRecord:
        """The record bound to `key`, or `InvalidCredential` (unknown, wrong secret, revoked)."""
        key_id, secret = parse_api_key(key)
        record = self._checked(key_id, secret, self.repository.lookup(key_id))
        due = self._use_due(key_id)
        if due is not None:
            self._note_use(key_id, due)
        return record

    async def verify_async(self, key: str) -> ApiKeyRecord:
        """`verify` for a caller on an event loop (the service's door): the lookup is the
        repository's `lookup_async` and the once-a-minute use note runs in a worker thread, so a
        store over the network (PostgreSQL) or a write waiting on a file lock never stalls the
        other requests the loop is serving. The same checks, in the same order."""
        key_id, secret = parse_api_key(key)
        record = self._checked(key_id, secret, await self.repository.lookup_async(key_id))
        due = self._use_due(key_id)
        if due is not None:
            await asyncio.to_thread(self._note_use, key_id, due)
        return record

    def _checked(self, key_id: str, secret: str, found: StoredApiKey | None) -> ApiKeyRecord:
        stored = found if found is not None else self._dummy  # same work either way: no oracle
        matches = _compare(_digest(stored.salt, secret), stored.digest)
        if found is None or not matches or found.scheme != _SCHEME:
            raise InvalidCredential("unknown API key")  # same message: no oracle for valid key ids
        if found.record.revoked:
            raise InvalidCredential(f"API key {key_id} has been revoked")
        return found.record

    def _use_due(self, key_id: str) -> float | None:
        """Now, if the key's last use is to be recorded (at most once a minute per key and
        process: one small write, never on every request); None otherwise."""
        now = time.time()
        if now - self._touched.get(key_id, 0.0) < _TOUCH_EVERY_S:
            return None
        self._touched[key_id] = now
        if len(self._touched) > 65536:
            self._touched.clear()
        return now

    def _note_use(self, key_id: str, now: float) -> None:
        """Record the key's last use for `keys list`. Bookkeeping only: a failure to record it
        is logged and never refuses a valid key."""
        try:
            self.repository.touch(key_id, now)
        except Exception as exc:  # noqa: BLE001 - bookkeeping must not turn a valid key away
            log.warning("could not record the last use of API key %s: %s", key_id, type(exc).__name__)


def _key_id(key_id: object) -> str:
    if not isinstance(key_id, str) or len(key_id) != _KEY_ID_HEX or any(c not in "0123456789abcdef" for c in key_id):
        raise InvalidIdentityInput(f"an API key id is {_KEY_ID_HEX} lowercase hex characters")
    return key_id


_MAX_IDS = 256


def _id_list(values: object, field_name: str) -> list[object]:
    """At most `_MAX_IDS` items, read lazily: a `range(10**12)` or an endless iterator is
    refused after 257 items, not materialised."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidIdentityInput(f"{field_name} must be a list of ids, not a {type(values).__name__}")
    try:
        items = list(itertools.islice(values, _MAX_IDS + 1))
    except Exception:  # noqa: BLE001 - a caller's iterable that fails while iterating
        raise InvalidIdentityInput(f"{field_name} could not be read as a list of ids") from None
    if len(items) > _MAX_IDS:
        raise InvalidIdentityInput(f"{field_name} holds more than {_MAX_IDS} ids")
    return items


def _label(label: object) -> str:
    if not isinstance(label, str) or len(label) > 200:
        raise InvalidIdentityInput("label must be a string of at most 200 characters")
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidIdentityInput("label must be valid unicode text (no lone surrogates)") from None
    return label


#: validated identities kept per provider (one per distinct key binding); cleared when full
_IDENTITY_CACHE_MAX = 4096


class ApiKeyProvider:
    """`ApiKey` -> the identity its key was issued for, with a fresh session id.

    Every call verifies the key against the store (lookup, hash, revocation) exactly as before;
    what is kept between calls is only the validated `MemoryIdentity` built from a binding, keyed
    on every field it is built from as the store returned them this time. Building one validates
    each id character by character — the largest part of authenticating a key once the lookup is
    done — and the result is a pure function of those fields: a key revoked, deleted or re-bound
    (other roles, another permission version) is refused or yields another identity at once,
    because nothing is served from the cache before the store has answered."""

    def __init__(self, store: ApiKeyStore) -> None:
        self.store = store
        self._identities: dict[tuple[object, ...], MemoryIdentity] = {}

    async def authenticate(self, credential: ApiKey) -> MemoryIdentity:
        identity = await self.bound_identity(credential)
        return identity.model_copy(update={"session_id": new_session_id()})  # the same validated fields; only the session is new (ours, valid by construction)

    async def bound_identity(self, credential: ApiKey) -> MemoryIdentity:
        """The identity `credential` is bound to, verified in full (lookup, hash, revocation) on
        this call, in whatever session it was first built with: for a caller that puts it in a
        session of its own at once (the service's default session), so that no fresh session id
        is made only to be replaced. `authenticate` is this plus a fresh session."""
        require_credential(credential, ApiKey, "API key provider")
        record = await self.store.verify_async(credential.key)
        binding = (record.tenant_id, record.user_id, record.department_ids, record.workspace_id, record.agent_id, record.roles, record.permission_version)
        try:
            known = self._identities.get(binding)
        except TypeError:  # a repository that returned unhashable fields: build it every time
            known, binding = None, None
        if known is not None:
            return known
        try:
            identity = MemoryIdentity(
                tenant_id=record.tenant_id,
                user_id=record.user_id,
                department_ids=record.department_ids,
                workspace_id=record.workspace_id,
                agent_id=record.agent_id,
                roles=record.roles,
                permission_version=record.permission_version,
                session_id=new_session_id(),
            )
        except ValueError as exc:  # a row edited by hand into something invalid: fail closed
            raise InvalidCredential(f"API key {record.key_id} is bound to an invalid identity") from exc
        if binding is not None:
            if len(self._identities) >= _IDENTITY_CACHE_MAX:
                self._identities.clear()
            self._identities[binding] = identity
        return identity
