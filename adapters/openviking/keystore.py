"""Where the bridge keeps the per-user OpenViking keys it provisioned (api_key mode).

A JSON file created with mode 0600 (refused if it is ever found readable by group or others),
replaced atomically on every change, optionally encrypted with a Fernet key (`cryptography`,
already installed through PyJWT[crypto]). Keys come out only as `SecretKey`; the store's repr
and every message name the file and the principal, never a key.

    {"version": 1, "keys": {"<account>/<user>": "<user key>"}}          (plaintext form)
    {"version": 1, "fernet": "<token of the JSON above>"}                 (encrypted form)

`MemoryKeyStore` is the same thing without a file (tests, short-lived processes).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import tempfile
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Protocol

from adapters.errors import BackendMisconfigured
from adapters.openviking.client import SecretKey

__all__ = ["KeyStore", "KeyStoreError", "MemoryKeyStore", "FileKeyStore"]


class KeyStoreError(BackendMisconfigured):
    """The key store is unreadable, too permissive or cannot be decrypted (a ConfigurationError:
    the deployment must fix the file or the key; retrying cannot help)."""


class KeyStore(Protocol):
    async def get(self, account: str, user: str) -> SecretKey | None: ...
    async def put(self, account: str, user: str, key: SecretKey) -> None: ...
    async def remove_account(self, account: str) -> None: ...
    def hold(self, account: str, user: str) -> AbstractAsyncContextManager[None]:
        """The critical section of minting this principal's key: one minter at a time across
        everyone sharing the store (a no-op for a store one process owns)."""
        ...


class MemoryKeyStore:
    def __init__(self) -> None:
        self._keys: dict[str, SecretKey] = {}

    async def get(self, account: str, user: str) -> SecretKey | None:
        return self._keys.get(f"{account}/{user}")

    async def put(self, account: str, user: str, key: SecretKey) -> None:
        self._keys[f"{account}/{user}"] = key

    def hold(self, account: str, user: str) -> AbstractAsyncContextManager[None]:
        return nullcontext()  # one process owns this store: the backend's own lock suffices

    async def remove_account(self, account: str) -> None:
        for name in [k for k in self._keys if k.split("/", 1)[0] == account]:
            del self._keys[name]

    def __repr__(self) -> str:
        return f"MemoryKeyStore({len(self._keys)} keys)"


class FileKeyStore:
    """A 0600 JSON file of keys, optionally Fernet-encrypted. Safe for one process at a time."""

    def __init__(self, path: str | os.PathLike[str], *, encryption_key: bytes | str | None = None) -> None:
        self.path = Path(path)
        self._fernet = None
        if encryption_key is not None:
            try:
                from cryptography.fernet import Fernet
            except ImportError as exc:  # pragma: no cover - cryptography ships with PyJWT[crypto]
                raise KeyStoreError("an encrypted key store needs the 'cryptography' package") from exc
            try:
                self._fernet = Fernet(encryption_key)
            except (ValueError, TypeError):
                raise KeyStoreError("encryption_key must be a urlsafe-base64 32-byte Fernet key") from None
        self._lock = asyncio.Lock()
        self._cache: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"FileKeyStore({str(self.path)!r}, encrypted={self._fernet is not None})"

    @property
    def encrypted(self) -> bool:
        return self._fernet is not None

    def _load(self) -> dict[str, str]:
        if not self.path.exists():
            return {}
        mode = stat.S_IMODE(self.path.stat().st_mode)
        if mode & 0o077:
            raise KeyStoreError(f"key store {self.path} has mode {mode:04o}; it must be 0600 (chmod 600 it)")
        try:
            doc = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise KeyStoreError(f"key store {self.path} is unreadable: {type(exc).__name__}") from None
        if "fernet" in doc:
            if self._fernet is None:
                raise KeyStoreError(f"key store {self.path} is encrypted; pass its encryption_key")
            try:
                doc = json.loads(self._fernet.decrypt(doc["fernet"].encode()))
            except Exception:
                raise KeyStoreError(f"key store {self.path} cannot be decrypted with this encryption_key") from None
        elif self._fernet is not None:
            raise KeyStoreError(f"key store {self.path} is not encrypted but an encryption_key was given")
        keys = doc.get("keys", {})
        if not isinstance(keys, dict):
            raise KeyStoreError(f"key store {self.path} is malformed")
        return {str(k): str(v) for k, v in keys.items()}

    def _save(self, keys: dict[str, str]) -> None:
        doc: dict[str, object] = {"version": 1, "keys": keys}
        if self._fernet is not None:
            doc = {"version": 1, "fernet": self._fernet.encrypt(json.dumps(doc).encode()).decode()}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".keys-", dir=self.path.parent)  # mkstemp creates 0600
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(doc, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    async def get(self, account: str, user: str) -> SecretKey | None:
        async with self._lock:
            if self._cache is None:
                self._cache = self._load()
            value = self._cache.get(f"{account}/{user}")
        return SecretKey(value) if value else None

    def hold(self, account: str, user: str) -> AbstractAsyncContextManager[None]:
        return nullcontext()  # one process owns this store: the backend's own lock suffices

    async def reload(self) -> None:
        async with self._lock:
            self._cache = self._load()

    async def put(self, account: str, user: str, key: SecretKey) -> None:
        async with self._lock:
            keys = self._load()
            keys[f"{account}/{user}"] = key.reveal()
            self._save(keys)
            self._cache = keys

    async def remove_account(self, account: str) -> None:
        async with self._lock:
            keys = {k: v for k, v in self._load().items() if k.split("/", 1)[0] != account}
            self._save(keys)
            self._cache = keys
