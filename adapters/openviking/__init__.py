"""OpenViking (0.5.2) behind the bridge: an httpx client, the scope mapping and the backend.

Never decides who may see what; see `backend.py` for the guarantees and docs/openviking.md for
the deployment modes and the mapping.
"""

from adapters.openviking.backend import Mode, OpenVikingBackend
from adapters.openviking.client import Auth, OpenVikingClient, RetryPolicy, SecretKey, TaskTimeout
from adapters.openviking.errors import OpenVikingError
from adapters.openviking.keystore import FileKeyStore, KeyStore, KeyStoreError, MemoryKeyStore
from adapters.openviking.mapping import Principal, ScopeMapper

__all__ = [
    "OpenVikingBackend", "Mode", "OpenVikingClient", "Auth", "RetryPolicy", "SecretKey", "TaskTimeout",
    "OpenVikingError", "KeyStore", "FileKeyStore", "MemoryKeyStore", "KeyStoreError", "Principal", "ScopeMapper",
]
