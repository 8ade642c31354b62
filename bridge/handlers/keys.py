"""Handlers of API-key management: list, issue and revoke the keys of the admin's own tenant.

The store is `rt.api_keys`, the one the service authenticates keys with, so a key revoked here
stops working at the next request. Permissions are `bridge/policy/keys.py`'s. Issuing and
revoking are audited (`api_key` rows naming the key id and its user, never the secret).
The store's methods are blocking (a synced SQLite write, or PostgreSQL round trips): they run
in a worker thread, never on the event loop that serves every other request.
"""

from __future__ import annotations

import asyncio

from bridge.errors import ConfigurationError
from bridge.operations.keys import IssueApiKey, ListApiKeys, RevokeApiKey
from bridge.policy.keys import check_issuable_roles, check_key_tenant, require_key_admin
from bridge.results import ApiKeyOut, IssuedApiKeyOut
from bridge.runtime import BridgeRuntime
from identity.model import MemoryIdentity
from identity.providers.api_keys import ApiKeyStore
from identity.state.protocols import ApiKeyRecord

__all__ = ["list_api_keys", "issue_api_key", "revoke_api_key"]


def _store(rt: BridgeRuntime) -> ApiKeyStore:
    if rt.api_keys is None:
        raise ConfigurationError("this service authenticates no API keys, so it manages none (set VIKING_BRIDGE_API_KEYS__DB_PATH and accept api_key credentials)")
    return rt.api_keys


def _out(r: ApiKeyRecord) -> ApiKeyOut:
    return ApiKeyOut(
        key_id=r.key_id, user_id=r.user_id, agent_id=r.agent_id, department_ids=tuple(sorted(r.department_ids)), workspace_id=r.workspace_id,
        roles=tuple(sorted(r.roles)), label=r.label, created_at=r.created_at, revoked_at=r.revoked_at,
    )


async def list_api_keys(rt: BridgeRuntime, identity: MemoryIdentity, op: ListApiKeys) -> list[ApiKeyOut]:
    require_key_admin(identity, "listing the API keys of the tenant")
    records = [r for r in await asyncio.to_thread(_store(rt).records, tenant_id=identity.tenant_id)
               if r.tenant_id == identity.tenant_id and (op.include_revoked or not r.revoked)]
    return [_out(r) for r in sorted(records, key=lambda r: (-r.created_at, r.key_id))]


async def issue_api_key(rt: BridgeRuntime, identity: MemoryIdentity, op: IssueApiKey) -> IssuedApiKeyOut:
    require_key_admin(identity, "issuing an API key")
    check_issuable_roles(identity, op.roles)
    issued = await asyncio.to_thread(
        _store(rt).issue, tenant_id=identity.tenant_id, user_id=op.user_id, agent_id=op.agent_id, department_ids=op.department_ids,
        workspace_id=op.workspace_id, roles=op.roles, label=op.label or f"issued by {identity.principal}",
    )
    await rt.state.audit.append(identity, "api_key", detail={"operation": "issue", "key_id": issued.record.key_id, "user_id": op.user_id, "agent_id": op.agent_id, "roles": list(op.roles)})
    return IssuedApiKeyOut(key=issued.key, record=_out(issued.record))


async def revoke_api_key(rt: BridgeRuntime, identity: MemoryIdentity, op: RevokeApiKey) -> bool:
    require_key_admin(identity, "revoking an API key")
    store = _store(rt)
    record = await asyncio.to_thread(store.get, op.key_id)
    check_key_tenant(identity, op.key_id, None if record is None else record.tenant_id)
    assert record is not None
    revoked = await asyncio.to_thread(store.revoke, op.key_id)
    if revoked:
        await rt.state.audit.append(identity, "api_key", detail={"operation": "revoke", "key_id": op.key_id, "user_id": record.user_id, "agent_id": record.agent_id})
    return revoked
